"""The harness finds the running cluster's state directory, so it can restart a killed node from any checkout,
and kills no process that is not a node of that very cluster."""

from __future__ import annotations

import os

import pytest

from esbridge.engines.base import Dialect
from tests.integration.cluster.nodes import (
    CLUSTER_KINDS,
    check_killable,
    cluster_name,
    node_pids,
    require_cluster,
    state_root,
)


def test_the_state_directory_is_read_from_a_live_node(cluster_kind: Dialect) -> None:
    root = state_root(require_cluster(cluster_kind), cluster_kind)

    assert root is not None
    assert (root / cluster_name(cluster_kind) / "node1").is_dir()
    assert any((root / cluster_name(cluster_kind)).glob("node1/**/node.pid"))


def test_only_nodes_of_the_named_cluster_may_be_killed(cluster_kind: Dialect) -> None:
    url = require_cluster(cluster_kind)
    name, pid = sorted(node_pids(url).items())[0]
    check_killable(cluster_kind, name, pid)  # its own node passes
    other = next(kind for kind in CLUSTER_KINDS if kind != cluster_kind)
    with pytest.raises(pytest.fail.Exception, match="not killing"):
        check_killable(other, name, pid)  # the other cluster's marker does not match
    with pytest.raises(pytest.fail.Exception, match="not killing"):
        check_killable(cluster_kind, "this test", os.getpid())  # nor does a process without any marker
