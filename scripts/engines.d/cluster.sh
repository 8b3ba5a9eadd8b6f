# shellcheck shell=bash
# scripts/engines: the three-node OpenSearch cluster ("opensearch-cluster"), sourced by scripts/engines.
#
# Each node is its own JVM (scripts/engines.d/OpenSearchLauncher.java, the same jars as the single node) on
# 127.0.0.1 with its own home, data, logs and pid file under <state>/opensearch-cluster/nodeN, HTTP port
# base+N-1 and transport port tbase+N-1. Discovery goes through loopback seed hosts; every node is
# cluster-manager eligible, so the cluster keeps a quorum with one node down. `up` starts the nodes that do not
# run (so it also brings back a node that was killed) and waits for green; `down` stops only the nodes whose pid
# files and command lines say this script started them.

oscl_config() {
  os_config # version, runner, k-NN and the resolved jars are the single node's
  oscl_nodes=${ESBRIDGE_OPENSEARCH_CLUSTER_NODES:-3}
  oscl_port=${ESBRIDGE_OPENSEARCH_CLUSTER_PORT:-9210}
  oscl_tport=${ESBRIDGE_OPENSEARCH_CLUSTER_TRANSPORT_PORT:-9310}
  oscl_heap=${ESBRIDGE_OPENSEARCH_CLUSTER_HEAP:-512m}
  [[ $oscl_nodes =~ ^[0-9]+$ ]] && ((oscl_nodes >= 2 && oscl_nodes <= 9)) ||
    die "ESBRIDGE_OPENSEARCH_CLUSTER_NODES must be 2-9, got '$oscl_nodes'"
  check_port ESBRIDGE_OPENSEARCH_CLUSTER_PORT "$oscl_port"
  check_port ESBRIDGE_OPENSEARCH_CLUSTER_TRANSPORT_PORT "$oscl_tport"
  check_heap ESBRIDGE_OPENSEARCH_CLUSTER_HEAP "$oscl_heap"
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

# Cluster health, waiting up to the timeout for green; "" when no node answers.
oscl_wait_green() {
  local deadline=$(($(date +%s) + timeout_s)) h="" n url
  while :; do
    for ((n = 1; n <= oscl_nodes; n++)); do
      url="http://127.0.0.1:$((oscl_port + n - 1))"
      h=$(health "$url")
      [[ -n $h ]] && break
    done
    [[ $h == green ]] && return 0
    if ! oscl_any_alive; then
      say "opensearch-cluster: every node exited during start-up"
      for ((n = 1; n <= oscl_nodes; n++)); do log_excerpt "$(oscl_node_dir "$n")/node.log"; done
      return 1
    fi
    if (($(date +%s) >= deadline)); then
      say "opensearch-cluster: not green within ${timeout_s}s (last: ${h:-no answer}); node logs: $oscl_state/node*/node.log"
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

oscl_down() {
  local n pid dir
  for ((n = 1; n <= oscl_nodes; n++)); do
    dir=$(oscl_node_dir "$n")
    pid=$(read_pid "$dir/node.pid")
    if [[ -z $pid ]]; then
      continue
    fi
    if is_ours "$pid" "$dir"; then
      say "opensearch-cluster: stopping node $n (pid $pid) ..."
      stop_pid "opensearch-cluster node $n" "$pid"
    fi
    rm -f "$dir/node.pid"
  done
  say "opensearch-cluster: stopped"
}

oscl_status() {
  local n pid dir running=0 h="" url=""
  for ((n = 1; n <= oscl_nodes; n++)); do
    dir=$(oscl_node_dir "$n")
    pid=$(read_pid "$dir/node.pid")
    if [[ -n $pid ]] && is_ours "$pid" "$dir"; then
      running=$((running + 1))
      url=${url:-http://127.0.0.1:$((oscl_port + n - 1))}
      echo "opensearch-cluster: node $n running  url=http://127.0.0.1:$((oscl_port + n - 1)) pid=$pid log=$dir/node.log"
    else
      echo "opensearch-cluster: node $n stopped  url=http://127.0.0.1:$((oscl_port + n - 1)) log=$dir/node.log"
    fi
  done
  [[ -z $url ]] || h=$(health "$url")
  echo "opensearch-cluster: $running of $oscl_nodes nodes running, health=${h:-no answer}"
  ((running == oscl_nodes)) || return 3
}
