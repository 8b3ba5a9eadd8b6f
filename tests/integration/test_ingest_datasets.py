"""The shared real datasets ingested end to end: every SciFact id searchable, vault links resolved."""

from __future__ import annotations

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.dialect import match_body
from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.model import Document
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.data import DENDRON_VAULT, SCIFACT, require


def test_scifact_ingests_completely_and_every_id_is_searchable(
    engine: Engine, alias: str, embedder: CachedEmbedder
) -> None:
    corpus = require(SCIFACT)
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    report = ingest(corpus, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="scifact"))
    assert report.failed == []
    expected = {item.doc_id: item.title for item in read_beir_corpus(corpus) if isinstance(item, Document)}
    assert report.documents_indexed == len(expected) == 5183

    indexed = {hit.source["doc_id"] for hit in engine.scan(alias, {"match_all": {}}, ["doc_id"], sort_field="chunk_id")}
    assert indexed == set(expected)
    assert engine.search(alias, {"size": 0, "query": {"term": {"embedding": "missing"}}}).total == 0

    for doc_id in ("4983", "31715818", sorted(expected)[len(expected) // 2]):
        hits = engine.search(alias, match_body(expected[doc_id], ["title"], size=3)).hits
        assert doc_id in {hit.source["doc_id"] for hit in hits}, doc_id

    again = ingest(corpus, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="scifact"))
    assert (again.chunks_indexed, again.embedded, again.deleted, again.failed) == (0, 0, 0, [])


def test_the_dendron_vault_ingests_with_its_links_resolved(
    engine: Engine, alias: str, embedder: CachedEmbedder
) -> None:
    vault = require(DENDRON_VAULT)
    manager = IndexManager(engine, alias, IndexParameters(dimension=embedder.dimension))
    report = ingest(vault, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(source="dendron"))
    assert report.failed == []
    assert report.documents_indexed == 1012

    def links_of(doc_id: str) -> list[str]:
        hits = engine.search(alias, {"query": {"term": {"doc_id": doc_id}}, "size": 1}).hits
        return list(hits[0].source["links"])

    # Checked by reading the notes (tests/unit/ingest/test_dendron_site_vault.py has the details).
    assert links_of("dendron.topic.pod.markdown") == ["dendron.topic.note-reference"]
    assert links_of("careers.developer-advocate")[:2] == ["careers.mission", "community.concepts"]
    assert "tags.role.taxonomist" in links_of("changelog.release.2021-08-09")

    # Who links to a note is one terms query on `links`, as graph expansion will ask it.
    backlinks = engine.search(alias, {"query": {"term": {"links": "careers.mission"}}, "size": 100}).hits
    assert "careers.developer-advocate" in {hit.source["doc_id"] for hit in backlinks}
