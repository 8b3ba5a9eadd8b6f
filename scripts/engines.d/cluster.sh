# shellcheck shell=bash
# scripts/engines: the three-node OpenSearch cluster ("opensearch-cluster"), sourced by scripts/engines.
#
# Each node is its own JVM (scripts/engines.d/OpenSearchLauncher.java, the same jars as the single node) on
# 127.0.0.1 with its own home, data, logs and pid file under <state>/opensearch-cluster/nodeN, HTTP port
# base+N-1 and transport port tbase+N-1. Discovery goes through loopback seed hosts; every node is
# cluster-manager eligible, so the cluster keeps a quorum with one node down. `up` starts the nodes that do not
# run (so it also brings back a node that was killed) and waits for green; `down` stops only the nodes whose pid
# files and command lines say this script started them.

# cluster_layout NAME DEFAULT_PORT DEFAULT_TRANSPORT_PORT: reads and checks ESBRIDGE_<NAME>_CLUSTER_NODES, _PORT,
# _TRANSPORT_PORT and _HEAP into cl_nodes, cl_port, cl_tport and cl_heap.
cluster_layout() {
  local var="ESBRIDGE_$1_CLUSTER"
  local nodes_var="${var}_NODES" port_var="${var}_PORT" tport_var="${var}_TRANSPORT_PORT" heap_var="${var}_HEAP"
  cl_nodes=${!nodes_var:-3}
  cl_port=${!port_var:-$2}
  cl_tport=${!tport_var:-$3}
  cl_heap=${!heap_var:-512m}
  [[ $cl_nodes =~ ^[0-9]+$ ]] && ((cl_nodes >= 2 && cl_nodes <= 9)) || die "$nodes_var must be 2-9, got '$cl_nodes'"
  check_port "$port_var" "$cl_port"
  check_port "$tport_var" "$cl_tport"
  check_heap "$heap_var" "$cl_heap"
}

# cluster_down NAME NODES STATE PIDFILE: stop node N (STATE/nodeN, pid in STATE/nodeN/PIDFILE) when it is ours.
cluster_down() {
  local name=$1 nodes=$2 state=$3 pidfile=$4 n pid dir
  for ((n = 1; n <= nodes; n++)); do
    dir="$state/node$n"
    pid=$(read_pid "$dir/$pidfile")
    [[ -n $pid ]] || continue
    if is_ours "$pid" "$dir"; then
      say "$name: stopping node $n (pid $pid) ..."
      stop_pid "$name node $n" "$pid"
    fi
    rm -f "$dir/$pidfile"
  done
  say "$name: stopped"
}

# cluster_status NAME NODES STATE PIDFILE PORT: one line per node, then the cluster's health; 3 unless all run.
cluster_status() {
  local name=$1 nodes=$2 state=$3 pidfile=$4 port=$5 n pid dir running=0 url="" h="" node_url
  for ((n = 1; n <= nodes; n++)); do
    dir="$state/node$n"
    pid=$(read_pid "$dir/$pidfile")
    node_url="http://127.0.0.1:$((port + n - 1))"
    if [[ -n $pid ]] && is_ours "$pid" "$dir"; then
      running=$((running + 1))
      url=${url:-$node_url}
      echo "$name: node $n running  url=$node_url pid=$pid"
    else
      echo "$name: node $n stopped  url=$node_url"
    fi
  done
  [[ -z $url ]] || h=$(health "$url")
  echo "$name: $running of $nodes nodes running, health=${h:-no answer}, logs under $state/node*"
  ((running == nodes)) || return 3
}

oscl_config() {
  os_config # version, runner, k-NN and the resolved jars are the single node's
  cluster_layout OPENSEARCH 9210 9310
  oscl_nodes=$cl_nodes oscl_port=$cl_port oscl_tport=$cl_tport oscl_heap=$cl_heap
  oscl_state="$state_root/opensearch-cluster"
  oscl_url="http://127.0.0.1:$oscl_port"
  oscl_seeds="" oscl_names=""
  local n
  for ((n = 1; n <= oscl_nodes; n++)); do
    oscl_seeds+="${oscl_seeds:+,}127.0.0.1:$((oscl_tport + n - 1))"
    oscl_names+="${oscl_names:+,}esbridge-os-$n"
  done
}

oscl_node_dir() { printf '%s' "$oscl_state/node$1"; }

oscl_any_alive() {
  local n dir
  for ((n = 1; n <= oscl_nodes; n++)); do
    dir=$(oscl_node_dir "$n")
    is_ours "$(read_pid "$dir/node.pid")" "$dir" && return 0
  done
  return 1
}

# Green with all `$2` nodes joined: green alone holds while a restarted node is still joining.
cluster_ready() {
  local body
  body=$(curl -sS --max-time 5 "$1/_cluster/health" 2>/dev/null) || return 1
  [[ $body == *'"status":"green"'* && $body == *"\"number_of_nodes\":$2,"* ]]
}

# Cluster health, waiting up to the timeout for green with every node; "" when no node answers.
oscl_wait_green() {
  local deadline=$(($(date +%s) + timeout_s)) h="" n url
  while :; do
    for ((n = 1; n <= oscl_nodes; n++)); do
      url="http://127.0.0.1:$((oscl_port + n - 1))"
      h=$(health "$url")
      [[ -n $h ]] && break
    done
    [[ $h == green ]] && cluster_ready "$url" "$oscl_nodes" && return 0
    if ! oscl_any_alive; then
      say "opensearch-cluster: every node exited during start-up"
      for ((n = 1; n <= oscl_nodes; n++)); do log_excerpt "$(oscl_node_dir "$n")/node.log"; done
      return 1
    fi
    if (($(date +%s) >= deadline)); then
      say "opensearch-cluster: not green with $oscl_nodes nodes within ${timeout_s}s (last: ${h:-no answer}); node logs: $oscl_state/node*/node.log"
      for ((n = 1; n <= oscl_nodes; n++)); do log_excerpt "$(oscl_node_dir "$n")/node.log"; done
      return 1
    fi
    sleep 2
  done
}

oscl_start_node() {
  local n=$1 java_home=$2 jv=$3 dir pid http tport
  dir=$(oscl_node_dir "$n")
  http=$((oscl_port + n - 1))
  tport=$((oscl_tport + n - 1))
  if port_busy "$http"; then
    die "opensearch-cluster: 127.0.0.1:$http (node $n) is in use by a process scripts/engines did not start (set ESBRIDGE_OPENSEARCH_CLUSTER_PORT)"
  fi
  if [[ ${fresh:-0} == 1 ]]; then rm -rf "$dir/data" "$dir/home"; fi
  mkdir -p "$dir/data" "$dir/home" "$dir/logs" "$dir/tmp"
  local opts=() o
  while IFS= read -r o; do opts+=("$o"); done < <(os_java_opts "$oscl_heap" "$jv" "$dir" opensearch-cluster)
  local largs=("home=$dir/home" "data=$dir/data" "logs=$dir/logs" "http.port=$http" "transport.port=$tport"
    "cluster.name=esbridge-cluster" "node.name=esbridge-os-$n" "seed.hosts=$oscl_seeds"
    "initial.managers=$oscl_names" "plugins=org.opensearch.knn.plugin.KNNPlugin") s
  for s in ${ESBRIDGE_OPENSEARCH_CLUSTER_SETTINGS:-}; do largs+=("setting=$s"); done
  rotate_log "$dir/node.log"
  (
    cd "$dir"
    exec nohup "$java_home/bin/java" "${opts[@]}" -cp "$os_dist/lib/*:$os_dist/plugins/*" \
      "$support_dir/OpenSearchLauncher.java" "${largs[@]}"
  ) </dev/null >>"$dir/node.log" 2>&1 9>&- &
  pid=$!
  printf '%s\n' "$pid" >"$dir/node.pid"
  say "opensearch-cluster: node $n starting on http://127.0.0.1:$http, transport $tport (pid $pid, heap $oscl_heap); log: $dir/node.log"
}

oscl_up() {
  local java_home jv n pid dir started=0 start
  if ((os_line >= 3)); then
    java_home=$(engine_java ESBRIDGE_OPENSEARCH_JAVA_HOME 21 0 "OpenSearch $os_version")
  else
    java_home=$(engine_java ESBRIDGE_OPENSEARCH_JAVA_HOME 11 21 "OpenSearch $os_version")
  fi
  jv=$(java_feature "$java_home")
  os_resolve
  mkdir -p "$oscl_state"
  start=$(date +%s)
  for ((n = 1; n <= oscl_nodes; n++)); do
    dir=$(oscl_node_dir "$n")
    pid=$(read_pid "$dir/node.pid")
    if [[ -n $pid ]] && is_ours "$pid" "$dir"; then
      continue
    fi
    rm -f "$dir/node.pid"
    oscl_start_node "$n" "$java_home" "$jv"
    started=$((started + 1))
  done
  printf 'version=%s\nurl=%s\nnodes=%s\nheap=%s\njava=%s\n' "$os_version" "$oscl_url" "$oscl_nodes" "$oscl_heap" \
    "$java_home" >"$oscl_state/cluster.info"
  if ! oscl_wait_green; then
    ((started == 0)) || say "opensearch-cluster: the nodes keep running; 'scripts/engines down opensearch-cluster' stops them"
    die "opensearch-cluster did not become green"
  fi
  say "opensearch-cluster: green at $oscl_url ($oscl_nodes nodes, $started started now) after $(($(date +%s) - start))s"
}

oscl_down() { cluster_down opensearch-cluster "$oscl_nodes" "$oscl_state" node.pid; }

oscl_status() { cluster_status opensearch-cluster "$oscl_nodes" "$oscl_state" node.pid "$oscl_port"; }

# ------------------------------------------------------------------------------- elasticsearch-cluster
# Three Elasticsearch nodes from the same integ-test build as the single node (bin/elasticsearch -d, one
# config directory each), HTTP 9220-9222, transport 9320-9322. Bootstrap checks only warn on loopback.

escl_config() {
  es_config # version, build, analysis stand-ins and the user to run as are the single node's
  cluster_layout ELASTICSEARCH 9220 9320
  escl_nodes=$cl_nodes escl_port=$cl_port escl_tport=$cl_tport escl_heap=$cl_heap
  escl_state="$state_root/elasticsearch-cluster"
  escl_seeds="" escl_names=""
  local n
  for ((n = 1; n <= escl_nodes; n++)); do
    escl_seeds+="${escl_seeds:+, }\"127.0.0.1:$((escl_tport + n - 1))\""
    escl_names+="${escl_names:+, }\"esbridge-es-$n\""
  done
}

escl_node_dir() { printf '%s' "$escl_state/node$1"; }

escl_running() {
  local dir pid
  dir=$(escl_node_dir "$1")
  pid=$(read_pid "$dir/run/node.pid")
  [[ -n $pid ]] && is_ours "$pid" "$dir"
}

escl_start_node() {
  local n=$1 java_home=$2 dir run conf http tport data
  dir=$(escl_node_dir "$n")
  run="$dir/run"
  conf="$run/config"
  http=$((escl_port + n - 1))
  tport=$((escl_tport + n - 1))
  if port_busy "$http"; then
    die "elasticsearch-cluster: 127.0.0.1:$http (node $n) is in use by a process scripts/engines did not start (set ESBRIDGE_ELASTICSEARCH_CLUSTER_PORT)"
  fi
  data="$run/data-$es_version"
  [[ $es_analysis == none ]] && data="$run/data-$es_version-bare"
  if [[ ${fresh:-0} == 1 ]]; then rm -rf "$data"; fi
  mkdir -p "$run/logs" "$run/tmp" "$data"
  rm -rf "$conf"
  cp -R "$es_home/config" "$conf"
  mkdir -p "$conf/jvm.options.d"
  cat >"$conf/elasticsearch.yml" <<YAML
# written by scripts/engines on every start
cluster.name: esbridge-es-cluster
node.name: esbridge-es-$n
network.host: 127.0.0.1
http.port: $http
transport.port: $tport
discovery.seed_hosts: [$escl_seeds]
cluster.initial_master_nodes: [$escl_names]
path.data: $data
path.logs: $run/logs
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
YAML
  printf -- '-Xms%s\n-Xmx%s\n' "$escl_heap" "$escl_heap" >"$conf/jvm.options.d/esbridge-heap.options"
  [[ -z $es_owner ]] || chown -R "$es_owner" "$run"
  rotate_log "$dir/start.log"
  local rc=0
  (
    cd "$run"
    export ES_JAVA_HOME="$java_home" ES_PATH_CONF="$conf" ES_TMPDIR="$run/tmp"
    export ES_JAVA_OPTS="-Desbridge.engine=elasticsearch-cluster -Desbridge.state=$dir"
    export CLI_JAVA_OPTS="-Djava.io.tmpdir=$run/tmp"
    unset JAVA_HOME
    exec "${es_runas[@]}" "$es_home/bin/elasticsearch" -d -p "$run/node.pid"
  ) </dev/null >>"$dir/start.log" 2>&1 9>&- &
  escl_launchers+=("$!")
  say "elasticsearch-cluster: node $n starting on http://127.0.0.1:$http, transport $tport (heap $escl_heap); log: $run/logs"
}

escl_up() {
  local reason java_home n started=0 start h url deadline
  escl_launchers=()
  reason=$(es_unavailable)
  [[ -z $reason ]] || die "elasticsearch-cluster: $reason"
  es_setup_user
  if ((es_line >= 9)); then
    java_home=$(engine_java ESBRIDGE_ELASTICSEARCH_JAVA_HOME 21 0 "Elasticsearch $es_version")
  else
    java_home=$(engine_java ESBRIDGE_ELASTICSEARCH_JAVA_HOME 17 0 "Elasticsearch $es_version")
  fi
  es_resolve
  es_install_analysis "$java_home"
  mkdir -p "$escl_state"
  [[ -z $es_owner ]] || chown "$es_owner" "$escl_state"
  start=$(date +%s)
  for ((n = 1; n <= escl_nodes; n++)); do
    escl_running "$n" && continue
    mkdir -p "$(escl_node_dir "$n")"
    escl_start_node "$n" "$java_home"
    started=$((started + 1))
  done
  # The launchers return once their node runs (or failed). Only they are waited for: a bare `wait` would also
  # wait for the OpenSearch cluster's nodes when one `up` starts both clusters, which never return.
  ((${#escl_launchers[@]} == 0)) || wait "${escl_launchers[@]}" || true
  deadline=$((start + timeout_s))
  while :; do
    h=""
    for ((n = 1; n <= escl_nodes; n++)); do
      url="http://127.0.0.1:$((escl_port + n - 1))"
      h=$(health "$url")
      [[ -n $h ]] && break
    done
    [[ $h == green ]] && cluster_ready "$url" "$escl_nodes" && break
    if (($(date +%s) >= deadline)); then
      for ((n = 1; n <= escl_nodes; n++)); do log_excerpt "$(escl_node_dir "$n")/start.log"; done
      die "elasticsearch-cluster did not become green within ${timeout_s}s (last: ${h:-no answer}); 'scripts/engines down elasticsearch-cluster' stops its nodes"
    fi
    sleep 2
  done
  say "elasticsearch-cluster: green at http://127.0.0.1:$escl_port ($escl_nodes nodes, $started started now) after $(($(date +%s) - start))s"
}

escl_down() { cluster_down elasticsearch-cluster "$escl_nodes" "$escl_state" run/node.pid; }

escl_status() { cluster_status elasticsearch-cluster "$escl_nodes" "$escl_state" run/node.pid "$escl_port"; }
