from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from esbridge.config import Settings, load_settings
from esbridge.engines import Engine, connect
from esbridge.engines.base import Dialect
from tests.integration.cluster.nodes import CLUSTER_KINDS, require_cluster, restart_missing_nodes


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/cluster/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(params=CLUSTER_KINDS)
def cluster_kind(request: pytest.FixtureRequest) -> Dialect:
    """The engine of the three-node cluster a test runs against: each test runs against both clusters."""
    kind: Dialect = request.param
    return kind


@pytest.fixture
def cluster_settings(cluster_kind: Dialect) -> Settings:
    return load_settings(url=require_cluster(cluster_kind), engine=cluster_kind, timeout_s=60)


@pytest.fixture
def cluster(cluster_settings: Settings) -> Iterator[Engine]:
    adapter = connect(cluster_settings)
    yield adapter
    adapter.close()


@pytest.fixture
def cluster_alias(cluster: Engine) -> Iterator[str]:
    """A unique alias on the cluster; every index whose name starts with it is deleted afterwards."""
    name = f"esbridge-cluster-test-{uuid.uuid4().hex[:10]}"
    yield name
    for info in cluster.list_indices(f"{name}*"):
        cluster.delete_index(info.name, missing_ok=True)


@pytest.fixture
def nodes_restored(cluster_kind: Dialect) -> Iterator[None]:
    """Whatever a test kills, the three nodes run (and the cluster is green) again afterwards."""
    yield
    restart_missing_nodes(cluster_kind)
