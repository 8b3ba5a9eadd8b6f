"""The retriever bodies of esbridge.query.bodies on live engines: boosts, filters, lifecycle, kNN pre-filtering."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.query.bodies import bm25_body, knn_body, links_body
from esbridge.query.models import Filters
from tests.integration.engines import load_records

RECORDS = [
    {"id": "solar", "title": "Solar panels", "text": "Solar panels make energy.", "tags": ["energy"],
     "entity_type": "note", "modified_at": "2026-11-01T00:00:00Z", "links": ["wind"]},
    {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms make energy.", "tags": ["energy"],
     "entity_type": "note", "modified_at": "2025-01-01T00:00:00Z", "links": ["grid"]},
    {"id": "grid", "title": "The power grid", "text": "Transmission lines carry energy.", "tags": ["infra"],
     "entity_type": "concept", "status": "deprecated"},
    {"id": "draft", "title": "Energy storage draft", "text": "Batteries store energy.", "tags": ["energy"],
     "status": "draft"},
    {"id": "tool", "title": "grid-tool", "text": "A server.", "entity_type": "tool", "links": ["solar"],
     "status": "active"},
] + [
    {"id": f"filler-{n}", "title": f"Filler {n}", "text": f"Unrelated text about topic {n}.", "tags": ["filler"]}
    for n in range(40)
]  # fmt: skip


@pytest.fixture
def loaded(engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path) -> str:
    return load_records(engine, alias, embedder, tmp_path, RECORDS)


def doc_ids(engine: Engine, alias: str, body: dict[str, object]) -> list[str]:
    return [str(hit.source["doc_id"]) for hit in engine.search(alias, body).hits]


def test_bm25_prefers_titles_and_excludes_lifecycle_states(engine: Engine, loaded: str) -> None:
    found = doc_ids(engine, loaded, bm25_body(engine.dialect, "energy", size=10, filters=Filters()))
    assert "grid" not in found and "draft" not in found, "deprecated and draft are excluded by default"
    assert set(found) >= {"solar", "wind"}
    everything = Filters(include_deprecated=True, include_draft=True)
    with_all = doc_ids(engine, loaded, bm25_body(engine.dialect, "energy", size=10, filters=everything))
    assert {"grid", "draft"} <= set(with_all)
    title_hit = doc_ids(engine, loaded, bm25_body(engine.dialect, "turbines", size=3, filters=Filters()))
    assert title_hit[0] == "wind"


def test_bm25_filters_by_terms_and_dates(engine: Engine, loaded: str) -> None:
    recent = Filters(terms={"tags": ["energy"]}, modified_after=datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert doc_ids(engine, loaded, bm25_body(engine.dialect, "energy panels", size=10, filters=recent)) == ["solar"]
    typed = Filters(terms={"entity_type": ["tool"]})
    assert doc_ids(engine, loaded, bm25_body(engine.dialect, "grid", size=10, filters=typed)) == ["tool"]


def test_knn_prefilter_still_returns_k_results(engine: Engine, loaded: str, embedder: CachedEmbedder) -> None:
    vector = embedder.embed(["renewable electricity"])[0]
    fillers = Filters(terms={"tags": ["filler"]})
    found = doc_ids(engine, loaded, knn_body(engine.dialect, vector, k=5, filters=fillers, num_candidates=20))
    assert len(found) == 5, "a selective filter applied during the search still fills k"
    assert all(doc.startswith("filler-") for doc in found)
    unfiltered = doc_ids(engine, loaded, knn_body(engine.dialect, vector, k=3, filters=Filters(), num_candidates=20))
    assert unfiltered[0] in {"solar", "wind"}
    assert "grid" not in unfiltered


def test_links_body_finds_out_and_in_links_in_one_request(engine: Engine, loaded: str) -> None:
    hits = engine.search(loaded, links_body(["solar"], size=50, filters=Filters())).hits
    by_doc = {str(hit.source["doc_id"]): list(hit.source["links"]) for hit in hits}
    assert by_doc["solar"] == ["wind"]  # the seed, with its out-links
    assert "tool" in by_doc  # links to the seed (in-link)


def test_knn_as_deep_as_the_settings_allow_is_answered(engine: Engine, loaded: str, embedder: CachedEmbedder) -> None:
    # pipeline.knn_k_per_type may be 10000, and the retriever asks twice that many candidates: Elasticsearch
    # refused anything over 10000 ("[num_candidates] cannot exceed [10000]") and the search fell back to BM25.
    vector = embedder.embed(["renewable electricity"])[0]
    body = knn_body(engine.dialect, vector, k=10_000, filters=Filters(), num_candidates=20_000)
    found = doc_ids(engine, loaded, body)
    assert len(found) == 43  # every searchable record: deprecated and draft are excluded
