"""A data node killed (SIGKILL) while SciFact is ingested into 3 primaries with 1 replica each.

The kill happens from inside the ingest, right after its second bulk request was answered, so it always falls
in the middle of the run. Afterwards every SciFact document must be present exactly once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from esbridge.config import Settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction, BulkResult, Dialect
from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.model import Document
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.cluster.nodes import kill_node, node_behind, nodes_holding_primaries
from tests.support.data import SCIFACT, require


class KillsANodeMidway:
    """The real engine; after its ``after``-th bulk request it kills a node holding primaries of the index."""

    def __init__(self, engine: Engine, url: str, kind: Dialect, after: int) -> None:
        self._engine = engine
        self._url = url
        self._kind = kind
        self._after = after
        self.bulks = 0
        self.killed: str | None = None

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        result = self._engine.bulk(index, actions)
        self.bulks += 1
        if self.bulks == self._after and self.killed is None:
            spared = node_behind(self._url)  # the node the client talks to (one URL) stays up
            victims = sorted(nodes_holding_primaries(self._url, index) - {spared})
            assert victims, f"no primary of {index} outside {spared}"
            self.killed = victims[0]
            kill_node(self._url, self.killed, self._kind)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def present(engine: Engine, alias: str) -> Counter[str]:
    """doc_id -> how many chunks of it the index holds, read from every shard."""
    return Counter(
        str(hit.source["doc_id"]) for hit in engine.scan(alias, {"match_all": {}}, ["doc_id"], sort_field="chunk_id")
    )


def test_a_node_killed_mid_ingest_loses_and_duplicates_nothing(
    cluster: Engine,
    cluster_kind: Dialect,
    cluster_settings: Settings,
    cluster_alias: str,
    embedder: CachedEmbedder,
    nodes_restored: None,
) -> None:
    corpus = require(SCIFACT)
    expected = {item.doc_id for item in read_beir_corpus(corpus) if isinstance(item, Document)}
    assert len(expected) == 5183
    url = str(cluster_settings.url)
    manager = IndexManager(cluster, cluster_alias, IndexParameters(dimension=embedder.dimension, shards=3, replicas=1))
    manager.create()
    killing = KillsANodeMidway(cluster, url, cluster_kind, after=2)
    options = IngestOptions(source="scifact", max_request_bytes=512 * 1024)  # many requests: the kill lands mid-run
    killing_engine: Engine = killing

    first = ingest(corpus, engine=killing_engine, manager=manager, embedder=embedder, options=options)

    assert killing.killed is not None and killing.bulks > 2
    reports: list[IngestReport] = [first]
    if first.failed:  # what was not written is named, chunk by chunk; a re-run writes it
        assert all(failure["id"] and failure["reason"] for failure in first.failed), first.failed[:3]
        reports.append(ingest(corpus, engine=cluster, manager=manager, embedder=embedder, options=options))
        assert reports[-1].failed == []
    cluster.refresh(cluster_alias)

    chunks = present(cluster, cluster_alias)
    assert set(chunks) == expected  # 5,183 of 5,183 documents
    assert cluster.count(cluster_alias) == sum(chunks.values())
    ids = [hit.id for hit in cluster.scan(cluster_alias, {"match_all": {}}, ["doc_id"], sort_field="chunk_id")]
    assert len(ids) == len(set(ids))  # no chunk twice
    again = ingest(corpus, engine=cluster, manager=manager, embedder=embedder, options=options)
    assert (again.chunks_indexed, again.deleted, again.failed) == (0, 0, [])
    print(
        f"killed {killing.killed} after bulk request 2 of {killing.bulks}; first run: "
        f"{first.chunks_indexed} chunks written, {len(first.failed)} failed; "
        f"{len(chunks)} of {len(expected)} documents present, each once"
    )
