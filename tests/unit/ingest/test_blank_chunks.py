"""A chunk whose embedding text shows nothing gets no vector: a model's vector of nothing sits near every query."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.base import embed_passages, embed_queries, passage_vectors
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EmbeddingError
from esbridge.ingest.model_record import reembed_stored, stored_to_reembed
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.text import is_blank
from tests.support.hashing import RECORDS, HashingEmbedder

EMPTY = {"id": "empty", "title": "", "text": " \u200b ", "tags": ["energy"]}


class NearEverything(HashingEmbedder):
    """As a real model does, embeds a text of nothing to a vector close to every query (here: all ones)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        ones = [self.dimension**-0.5] * self.dimension
        return [ones if is_blank(text) else vector for text, vector in zip(texts, super().embed(texts), strict=True)]


def test_passage_vectors_give_a_blank_text_none_and_every_other_text_its_vector() -> None:
    model = NearEverything()
    texts = ["tides and currents", "", " \u200b\u2060 ", "solar panels"]
    vectors = passage_vectors(model, texts)
    assert vectors[1] is None and vectors[2] is None
    assert vectors[0] == embed_passages(model, [texts[0]])[0]
    assert vectors[3] == embed_passages(model, [texts[3]])[0]
    assert passage_vectors(model, ["", " "]) == [None, None]
    assert passage_vectors(model, ["!!!", "solar"]) == [None, embed_passages(model, ["solar"])[0]]  # a zero vector


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setitem(EMBEDDERS, "near-everything", lambda settings: NearEverything())
    return CliRunner(
        env={
            "ESBRIDGE_EMBEDDING__PROVIDER": "near-everything",
            "ESBRIDGE_DATA_DIR": str(tmp_path / "data"),
            "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
        }
    )


def _ingest(cli: CliRunner, records: Path) -> dict[str, object]:
    result = cli.invoke(main, ["ingest", str(records), "--index", "notes", "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.stdout)
    return report


def test_a_record_with_nothing_to_embed_is_kept_without_a_vector_and_no_knn_search_finds_it(
    cli: CliRunner, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps(record) for record in [*RECORDS, EMPTY]), encoding="utf-8")
    first = _ingest(cli, records)
    assert (first["chunks_indexed"], first["embedded"], first["failed"]) == (len(RECORDS) + 1, len(RECORDS), [])

    engine = EmbeddedEngine(tmp_path / "data")
    try:
        stored = engine.search("notes", {"size": 5, "query": {"term": {"doc_id": "empty"}}}).hits
        assert [hit.source["embedding"] for hit in stored] == ["none"]
        assert "vector" not in stored[0].source
        query = NearEverything().embed(["bread and flour"])[0]
        knn = {"size": 10, "query": {"knn": {"vector": {"vector": query, "k": 10}}}}
        found = [hit.source["doc_id"] for hit in engine.search("notes", knn).hits]
    finally:
        engine.close()
    assert found and found[0] == "bread" and "empty" not in found

    again = _ingest(cli, records)  # nothing changed, nothing waits for a vector
    assert (again["chunks_indexed"], again["unchanged"]) == (0, len(RECORDS) + 1)
    missing = cli.invoke(main, ["embed", "--missing", "--index", "notes", "--json"])
    assert missing.exit_code == 0, missing.output
    assert json.loads(missing.stdout)["chunks_indexed"] == 0


class SeesPunctuation(HashingEmbedder):
    """Another model, which sees something in punctuation too."""

    name = identity = "sees-punctuation"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[self.dimension**-0.5] * self.dimension for _ in texts]


def test_a_re_embedding_takes_the_vector_of_nothing_away_from_a_blank_chunk_stored_with_one(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    model = NearEverything()
    try:
        IndexManager(engine, "notes", IndexParameters(dimension=model.dimension)).create()
        stored = {"doc_id": "empty", "chunk_id": "empty#0", "title": "", "body": " \u200b ", "source": "older"}
        ones = model.embed([""])[0]
        writes = [
            BulkAction("index", "empty#0", {**stored, "embedding": "ok", "vector": ones}),
            BulkAction("index", "bread#0", {**stored, "doc_id": "bread", "chunk_id": "bread#0", "body": "flour"}),
        ]
        assert engine.bulk("notes", writes).failed == []
        engine.refresh("notes")
        hits = stored_to_reembed(engine, "notes")
        assert [hit.id for hit in hits] == ["empty#0"]
        assert reembed_stored(engine, "notes", model, hits) == (0, [])  # no vector given, no failure
        engine.refresh("notes")
        assert stored_states(engine) == {"empty#0": ("none", None), "bread#0": (None, None)}

        # A chunk the first model saw nothing in is embedded again by one that sees something in it.
        dashes = {**stored, "doc_id": "dashes", "chunk_id": "dashes#0", "body": "-- !!! --", "embedding": "none"}
        assert engine.bulk("notes", [BulkAction("index", "dashes#0", dashes)]).failed == []
        engine.refresh("notes")
        hits = stored_to_reembed(engine, "notes")
        assert [hit.id for hit in hits] == ["dashes#0", "empty#0"]
        assert reembed_stored(engine, "notes", SeesPunctuation(), hits) == (1, [])
        engine.refresh("notes")
        assert stored_states(engine)["dashes#0"] == ("ok", pytest.approx(SeesPunctuation().embed(["x"])[0]))
        assert stored_states(engine)["empty#0"] == ("none", None)
    finally:
        engine.close()


def stored_states(engine: EmbeddedEngine) -> dict[str, tuple[object, object]]:
    hits = engine.search("notes", {"size": 10, "query": {"match_all": {}}}).hits
    return {hit.id: (hit.source.get("embedding"), hit.source.get("vector")) for hit in hits}


def test_a_text_the_model_sees_nothing_in_is_indexed_without_a_vector_and_such_a_query_says_so(
    cli: CliRunner, tmp_path: Path
) -> None:
    # The hashing model sees words only: its vector of punctuation is zero, which no engine takes for cosine.
    records = tmp_path / "records.jsonl"
    dashes = {"id": "dashes", "title": "", "text": "-- !!! --", "tags": ["energy"]}
    records.write_text("\n".join(json.dumps(record) for record in [*RECORDS, dashes]), encoding="utf-8")
    first = _ingest(cli, records)
    assert (first["chunks_indexed"], first["embedded"], first["failed"]) == (len(RECORDS) + 1, len(RECORDS), [])
    assert first["warnings"] == [
        "1 chunk(s) hold text in which hashing-32 sees nothing (its vector of them is zero, which no engine searches "
        "by cosine): indexed without a vector, for BM25 and filters only"
    ]
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        (hit,) = engine.search("notes", {"query": {"term": {"doc_id": "dashes"}}}).hits
        assert (hit.source["embedding"], hit.source.get("vector")) == ("none", None)
    finally:
        engine.close()
    again = _ingest(cli, records)  # converges: not embedded again while its text stays the same
    assert (again["chunks_indexed"], again["unchanged"], again["warnings"]) == (0, len(RECORDS) + 1, [])
    missing = cli.invoke(main, ["embed", "--missing", "--index", "notes", "--json"])
    assert missing.exit_code == 0, missing.output
    assert json.loads(missing.stdout)["chunks_indexed"] == 0

    with pytest.raises(EmbeddingError, match="its vector of the query '!!!' is zero"):
        embed_queries(NearEverything(), ["!!!"])
    searched = cli.invoke(main, ["search", "!!!", "--index", "notes", "--json"])
    assert searched.exit_code == 0, searched.output
    answer = json.loads(searched.stdout)
    assert answer["search_mode"] == "lexical-only"
    assert any("'hashing-32': its vector of the query '!!!' is zero" in warning for warning in answer["warnings"])
