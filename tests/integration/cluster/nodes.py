"""The three-node loopback clusters of ``scripts/engines up opensearch-cluster`` and ``elasticsearch-cluster``:
where each is, and killing a node.

Only a node whose process runs on this machine with the marker scripts/engines gives the nodes of that
cluster (``-Desbridge.engine=opensearch-cluster`` or ``-Desbridge.engine=elasticsearch-cluster``) is ever
killed, so no test can stop anyone else's engine, nor a node of the other cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from esbridge.config import load_settings
from esbridge.engines.base import Dialect
from esbridge.engines.factory import detect
from esbridge.errors import EsbridgeError

REPO = Path(__file__).resolve().parents[3]
STATE_MARKER = b"-Desbridge.state="
# Engine -> the variable naming its cluster's URL. The tier runs against every cluster given here.
URL_VARIABLES: dict[Dialect, str] = {
    "opensearch": "ESBRIDGE_TEST_CLUSTER_URL",
    "elasticsearch": "ESBRIDGE_TEST_ELASTICSEARCH_CLUSTER_URL",
}
CLUSTER_KINDS: tuple[Dialect, ...] = tuple(URL_VARIABLES)
# Read at import, before the test-wide fixture unsets ESBRIDGE_* variables: restarting a node needs the
# state directory (ESBRIDGE_ENGINES_DIR) and ports the cluster was started with.
START_ENVIRONMENT = dict(os.environ)


def cluster_name(kind: Dialect) -> str:
    """scripts/engines' name of the ``kind`` cluster."""
    return f"{kind}-cluster"


def marker(kind: Dialect) -> bytes:
    """The command-line argument every JVM of scripts/engines' ``kind`` cluster carries."""
    return f"-Desbridge.engine={cluster_name(kind)}".encode()


def cluster_url(kind: Dialect) -> str | None:
    return os.environ.get(URL_VARIABLES[kind]) or None


def require_cluster(kind: Dialect) -> str:
    """The ``kind`` cluster's URL; a skip when none is configured (a failure in CI), a failure when one is
    configured but is not three green nodes of that engine."""
    variable, name = URL_VARIABLES[kind], cluster_name(kind)
    url = cluster_url(kind)
    if url is None and os.environ.get("CI"):
        pytest.fail(f"CI: the cluster tier needs {variable} (.ci/run sets it after starting the {name})")
    if url is None:
        pytest.skip(f"{variable} is not set: the cluster tier runs against scripts/engines up {name} (.ci/run does it)")
    try:
        health = get(url, "/_cluster/health?wait_for_status=green&wait_for_nodes=3&timeout=120s")
        distribution = detect(load_settings(url=url, engine="auto", timeout_s=30))
    except (OSError, EsbridgeError) as exc:
        pytest.fail(f"{variable}={url} does not answer: {exc}")
    if distribution != kind:
        pytest.fail(f"{variable}={url} is {distribution}, not {kind}")
    if health.get("number_of_nodes", 0) < 3 or health.get("status") != "green":
        pytest.fail(f"the cluster at {url} is not three green nodes: {health}")
    return url


def get(url: str, path: str) -> Any:
    with urllib.request.urlopen(f"{url}{path}", timeout=150) as answer:
        return json.load(answer)


def node_pids(url: str) -> dict[str, int]:
    """Node name -> process id, as the cluster reports them."""
    nodes = get(url, "/_nodes/process")["nodes"].values()
    return {node["name"]: int(node["process"]["id"]) for node in nodes}


def nodes_holding_primaries(url: str, index: str) -> set[str]:
    rows = get(url, f"/_cat/shards/{index}?format=json")
    return {row["node"] for row in rows if row["prirep"] == "p" and row.get("node")}


def node_behind(url: str) -> str:
    """The name of the node that answers at ``url`` (the one a client talks to)."""
    return str(get(url, "/_nodes/_local")["nodes"].popitem()[1]["name"])


def command_line(pid: int) -> list[bytes]:
    """The process's arguments, or none when it is not visible here."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def check_killable(kind: Dialect, name: str, pid: int) -> None:
    """Fails unless process ``pid`` is a local node of scripts/engines' ``kind`` cluster."""
    if marker(kind) not in command_line(pid):
        pytest.fail(f"node {name} (pid {pid}) is not a node of scripts/engines' {cluster_name(kind)}; not killing")


def kill_node(url: str, name: str, kind: Dialect) -> None:
    """SIGKILL the node's JVM (no shutdown hooks run) and wait until the cluster has noticed it is gone."""
    pid = node_pids(url)[name]
    check_killable(kind, name, pid)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while name in node_pids(url):
        if time.monotonic() > deadline:
            pytest.fail(f"the cluster still lists node {name} 60s after it was killed")
        time.sleep(0.5)


def state_root(url: str, kind: Dialect) -> Path | None:
    """The state directory the running cluster was started with, read from a live node's command line.

    A node's JVM carries ``-Desbridge.state=<state root>/<kind>-cluster/nodeN``. The checkout that runs
    the tests may not be the one that started the cluster, and its own default state directory would then
    hold no cluster to restart nodes in.
    """
    try:
        pids = node_pids(url).values()
    except OSError:
        return None
    for pid in pids:
        arguments = command_line(pid)
        if marker(kind) not in arguments:
            continue
        for argument in arguments:
            if argument.startswith(STATE_MARKER):
                return Path(os.fsdecode(argument[len(STATE_MARKER) :])).parents[1]
    return None


def restart_missing_nodes(kind: Dialect) -> None:
    """``scripts/engines up <kind>-cluster``: starts the nodes that do not run and waits for green.

    Runs with the state directory of the running cluster, whichever checkout started it.
    """
    environment = dict(START_ENVIRONMENT)
    url = cluster_url(kind)
    root = state_root(url, kind) if url else None
    if root is not None and "ESBRIDGE_ENGINES_DIR" not in environment:
        environment["ESBRIDGE_ENGINES_DIR"] = str(root)
    subprocess.run(
        [str(REPO / "scripts" / "engines"), "up", cluster_name(kind)],
        env=environment,
        check=True,
        timeout=600,
    )
