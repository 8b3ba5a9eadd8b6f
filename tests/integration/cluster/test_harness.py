"""The harness finds the running cluster's state directory, so it can restart a killed node from any checkout."""

from __future__ import annotations

from tests.integration.cluster.nodes import require_cluster, state_root


def test_the_state_directory_is_read_from_a_live_node() -> None:
    root = state_root(require_cluster())

    assert root is not None
    assert (root / "opensearch-cluster" / "cluster.info").is_file()
    assert (root / "opensearch-cluster" / "node1").is_dir()
