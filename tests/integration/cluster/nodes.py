"""The three-node loopback cluster of ``scripts/engines up opensearch-cluster``: where it is, and killing a node.

Only a node whose process runs on this machine with the marker scripts/engines gives cluster nodes
(``-Desbridge.engine=opensearch-cluster``) is ever killed, so no test can stop anyone else's engine.
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

REPO = Path(__file__).resolve().parents[3]
CLUSTER_MARKER = b"-Desbridge.engine=opensearch-cluster"
STATE_MARKER = b"-Desbridge.state="
# Read at import, before the test-wide fixture unsets ESBRIDGE_* variables: restarting a node needs the
# state directory (ESBRIDGE_ENGINES_DIR) and ports the cluster was started with.
START_ENVIRONMENT = dict(os.environ)


def cluster_url() -> str | None:
    return os.environ.get("ESBRIDGE_TEST_CLUSTER_URL") or None


def require_cluster() -> str:
    """The cluster's URL; a skip when none is configured, a failure when one is configured but not all there."""
    url = cluster_url()
    if url is None and os.environ.get("CI"):
        pytest.fail("CI: the cluster tier needs ESBRIDGE_TEST_CLUSTER_URL (.ci/run sets it after starting the cluster)")
    if url is None:
        pytest.skip(
            "ESBRIDGE_TEST_CLUSTER_URL is not set: the cluster tier runs against scripts/engines up opensearch-cluster "
            "(.ci/run does both)"
        )
    try:
        health = get(url, "/_cluster/health?wait_for_status=green&wait_for_nodes=3&timeout=120s")
    except OSError as exc:
        pytest.fail(f"ESBRIDGE_TEST_CLUSTER_URL={url} does not answer: {exc}")
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


def kill_node(url: str, name: str) -> None:
    """SIGKILL the node's JVM (no shutdown hooks run) and wait until the cluster has noticed it is gone."""
    pid = node_pids(url)[name]
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        command_line = b""
    if CLUSTER_MARKER not in command_line:
        pytest.fail(f"node {name} (pid {pid}) is not a local node of scripts/engines' opensearch-cluster; not killing")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while name in node_pids(url):
        if time.monotonic() > deadline:
            pytest.fail(f"the cluster still lists node {name} 60s after it was killed")
        time.sleep(0.5)


def state_root(url: str) -> Path | None:
    """The state directory the running cluster was started with, read from a live node's command line.

    A node's JVM carries ``-Desbridge.state=<state root>/opensearch-cluster/nodeN``. The checkout that runs
    the tests may not be the one that started the cluster, and its own default state directory would then
    hold no cluster to restart nodes in.
    """
    try:
        pids = node_pids(url).values()
    except OSError:
        return None
    for pid in pids:
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if CLUSTER_MARKER not in arguments:
            continue
        for argument in arguments:
            if argument.startswith(STATE_MARKER):
                return Path(os.fsdecode(argument[len(STATE_MARKER) :])).parents[1]
    return None


def restart_missing_nodes() -> None:
    """``scripts/engines up opensearch-cluster``: starts the nodes that do not run and waits for green.

    Runs with the state directory of the running cluster, whichever checkout started it.
    """
    environment = dict(START_ENVIRONMENT)
    url = cluster_url()
    root = state_root(url) if url else None
    if root is not None and "ESBRIDGE_ENGINES_DIR" not in environment:
        environment["ESBRIDGE_ENGINES_DIR"] = str(root)
    subprocess.run(
        [str(REPO / "scripts" / "engines"), "up", "opensearch-cluster"],
        env=environment,
        check=True,
        timeout=600,
    )
