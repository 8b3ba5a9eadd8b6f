/*
 * esbridge: starts ONE embedded OpenSearch node for local development and CI (see scripts/engines): a single-node
 * cluster by default, or one node of a multi-node cluster (one JVM per node) when seed.hosts is given.
 *
 * Run as a single-file source program (no javac step), with the jars resolved by scripts/engines.d/opensearch-pom.xml
 * on the class path:
 *
 *   java -cp 'lib/*:plugins/*' scripts/engines.d/OpenSearchLauncher.java home=DIR http.port=9200 ...
 *
 * Arguments are key=value pairs (see Options below). Plugins are loaded in classpath mode (the runner's
 * pluginTypes): their plugin-descriptor checks are skipped, and so is extension loading between plugins.
 *
 * Unlike the runner's own main(), every failure is printed with its stack trace and the JVM exits with
 * status 1, so the log explains why a node did not come up.
 */

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.codelibs.opensearch.runner.OpenSearchRunner;
import org.opensearch.Version;
import org.opensearch.common.settings.Settings;

public final class OpenSearchLauncher {

    private static final PrintStream OUT = System.out;

    /** key=value arguments with their defaults. */
    private static final class Options {
        final Map<String, String> values = new LinkedHashMap<>();
        final List<String> extraSettings = new ArrayList<>();

        Options(final String[] args) {
            values.put("home", null);                 // base path of the runner (node home = <home>/node_1)
            values.put("data", null);                 // path.data
            values.put("logs", null);                 // path.logs
            values.put("cluster.name", "esbridge");
            values.put("node.name", "esbridge-opensearch");
            values.put("http.port", "9200");
            values.put("transport.port", "9300");
            values.put("host", "127.0.0.1");
            values.put("plugins", "");                // comma-separated plugin classes on the class path
            values.put("default.replicas", "0");      // persistent cluster.default_number_of_replicas ("" = leave)
            values.put("seed.hosts", "");             // comma-separated host:transport-port of the cluster's nodes
                                                      // ("" = discovery.type single-node)
            values.put("initial.managers", "");       // comma-separated node names that bootstrap a new cluster
            for (final String arg : args) {
                final int eq = arg.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected key=value, got: " + arg);
                }
                final String key = arg.substring(0, eq);
                final String value = arg.substring(eq + 1);
                if (key.equals("setting")) {          // setting=some.key=value, repeatable: extra node settings
                    extraSettings.add(value);
                } else if (values.containsKey(key)) {
                    values.put(key, value);
                } else {
                    throw new IllegalArgumentException("unknown option: " + key);
                }
            }
            for (final String required : new String[] { "home", "data", "logs" }) {
                if (values.get(required) == null || values.get(required).isEmpty()) {
                    throw new IllegalArgumentException("missing option: " + required + "=...");
                }
            }
        }

        String get(final String key) {
            return values.get(key);
        }
    }

    private OpenSearchLauncher() {
    }

    private static void log(final String message) {
        OUT.println("[" + Instant.now() + "][esbridge-launcher] " + message);
        OUT.flush();
    }

    public static void main(final String[] args) {
        final Options options;
        try {
            options = new Options(args);
        } catch (final IllegalArgumentException e) {
            System.err.println("OpenSearchLauncher: " + e.getMessage());
            System.exit(2);
            return;
        }

        final long pid = ProcessHandle.current().pid();
        log("pid " + pid + ", java " + Runtime.version() + " (" + System.getProperty("java.home") + "), max heap "
                + (Runtime.getRuntime().maxMemory() >> 20) + " MiB, OpenSearch " + Version.CURRENT);
        log("jvm args: " + ManagementFactory.getRuntimeMXBean().getInputArguments());

        final OpenSearchRunner runner = new OpenSearchRunner();
        final CountDownLatch stopped = new CountDownLatch(1);

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log("shutting down");
            try {
                runner.close();
            } catch (final IOException | RuntimeException e) {
                e.printStackTrace(OUT);
            }
            log("stopped");
            stopped.countDown();
        }, "esbridge-shutdown"));

        try {
            final String host = options.get("host");
            final int httpPort = Integer.parseInt(options.get("http.port"));
            runner.onBuild((index, settings) -> {
                settings.put("cluster.name", options.get("cluster.name"));
                settings.put("node.name", options.get("node.name"));
                settings.put("network.host", host);
                settings.put("http.port", options.get("http.port"));
                settings.put("transport.port", options.get("transport.port"));
                settings.put("path.data", options.get("data"));
                settings.put("path.logs", options.get("logs"));
                final String seeds = options.get("seed.hosts").trim();
                if (seeds.isEmpty()) {
                    settings.put("discovery.type", "single-node");
                } else {
                    settings.put("discovery.type", "zen"); // the runner makes a one-node run single-node otherwise
                    settings.putList("discovery.seed_hosts", seeds.split(","));
                    settings.putList("cluster.initial_cluster_manager_nodes", options.get("initial.managers").split(","));
                }
                settings.putList("node.roles", "cluster_manager", "data", "ingest");
                settings.put("cluster.routing.allocation.disk.threshold_enabled", "false");
                settings.put("action.destructive_requires_name", "false");
                for (final String extra : options.extraSettings) {
                    final int eq = extra.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("setting=KEY=VALUE expected, got: setting=" + extra);
                    }
                    settings.put(extra.substring(0, eq), extra.substring(eq + 1));
                }
            });

            final OpenSearchRunner.Configs configs = OpenSearchRunner.newConfigs()
                    .basePath(options.get("home"))
                    .numOfNode(1)
                    .baseHttpPort(httpPort - 1) // the runner gives node N the port base+N; http.port above wins anyway
                    .clusterName(options.get("cluster.name"));
            final String plugins = options.get("plugins").trim();
            if (!plugins.isEmpty()) {
                for (final String type : plugins.split(",")) {
                    Class.forName(type.trim()); // fail with the class name if a plugin jar is missing
                }
                configs.pluginTypes(plugins);
            }
            log("starting node: home=" + options.get("home") + " data=" + options.get("data") + " http=" + host + ":"
                    + httpPort + " plugins=[" + plugins + "]");
            runner.build(configs);
            if (!options.get("seed.hosts").trim().isEmpty()) {
                // The cluster forms once a majority of its cluster-manager nodes run; scripts/engines waits for its
                // health over HTTP, so this node neither blocks nor times out waiting for the others.
                log("ready: node " + options.get("node.name") + " of cluster " + options.get("cluster.name")
                        + " at http://" + host + ":" + httpPort + " (pid " + pid + ")");
            } else {
                runner.ensureYellow();
                // New indices get this many replicas unless they ask otherwise (0: a single node stays green).
                // Index creation reads cluster.default_number_of_replicas from the cluster metadata (persistent or
                // transient cluster settings), not from node settings, so it is set through the API.
                final String replicas = options.get("default.replicas");
                if (!replicas.isEmpty()) {
                    runner.client().admin().cluster().prepareUpdateSettings()
                            .setPersistentSettings(
                                    Settings.builder().put("cluster.default_number_of_replicas", replicas).build())
                            .get();
                }
                log("ready: OpenSearch " + Version.CURRENT + " at http://" + host + ":" + httpPort + " (pid " + pid + ")");
            }
        } catch (final Throwable t) {
            log("FAILED to start OpenSearch: " + t);
            t.printStackTrace(OUT);
            OUT.flush();
            // halt: the node may hold non-daemon threads that would keep a half-started JVM alive
            Runtime.getRuntime().halt(1);
        }

        try {
            stopped.await(); // node threads keep the JVM alive; this keeps main parked until shutdown
        } catch (final InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
