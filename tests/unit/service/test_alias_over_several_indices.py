"""A search over an alias that points to several indices: read only when they hold vectors of one model and
dimension, else refused naming each index and its model, alike by the CLI, the sidecar and the MCP server (all
check the index through ``searched_mapping``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config.settings import EmbeddingSettings
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.embeddings.identity import ModelIdentity, identity_of
from esbridge.engines import connect
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import AmbiguousAlias
from esbridge.ingest.model_record import record_model
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.model_check import searched_mapping
from esbridge.service.backend import Backend
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder
from tests.unit.service.conftest import ClientFactory, call_tool, service_settings, tool_text

REFUSED = "alias 'notes' points to several indices whose vectors are not of one model (notes-v1: hashing-32 ("


def two_versions(engine: EmbeddedEngine, second: ModelIdentity | None, dimension: int = 32) -> None:
    """notes-v1 (hashing-32's vectors) and notes-v2 (recording ``second``), both behind ``notes``, as a rollback
    that added the old version back without removing the new one leaves them."""
    embedder = HashingEmbedder()
    IndexManager(engine, "notes", IndexParameters(dimension=32)).create()
    document = {"chunk_id": "a#0", "doc_id": "a", "body": "solar power", "embedding": "ok"}
    assert not engine.bulk(
        "notes", [BulkAction("index", "a#0", {**document, "vector": embedder.embed(["x"])[0]})]
    ).failed
    record_model(engine, "notes", identity_of(embedder))
    engine.create_index("notes-v2", IndexManager(engine, "notes", IndexParameters(dimension=dimension)).wanted_body())
    if second is not None:
        record_model(engine, "notes-v2", second)
    engine.update_aliases([{"add": {"index": "notes-v2", "alias": "notes"}}])


@pytest.mark.parametrize(
    ("second", "dimension"),
    [(identity_of(OtherHashingEmbedder()), 32), (None, 32), (identity_of(HashingEmbedder()), 16)],
    ids=["another-model", "no-record", "another-dimension"],
)
def test_indices_not_of_one_model_and_dimension_are_refused_naming_each(
    engine_with_notes: EmbeddedEngine, second: ModelIdentity | None, dimension: int
) -> None:
    two_versions(engine_with_notes, second, dimension)
    with pytest.raises(AmbiguousAlias) as refused:
        searched_mapping(engine_with_notes, "notes")
    assert str(refused.value).startswith(REFUSED)
    assert "notes-v2: " in str(refused.value)
    assert "Point the alias at one index" in str(refused.value)


def test_indices_of_one_model_are_searched(engine_with_notes: EmbeddedEngine) -> None:
    two_versions(engine_with_notes, identity_of(HashingEmbedder()))
    assert searched_mapping(engine_with_notes, "notes")["_meta"]["esbridge_model"]["name"] == "hashing-32"


@pytest.fixture
def engine_with_notes() -> Iterator[EmbeddedEngine]:
    engine = connect(service_settings())
    assert isinstance(engine, EmbeddedEngine)
    yield engine
    engine.close()


def other_models_behind_notes() -> None:
    engine = connect(service_settings())
    try:
        assert isinstance(engine, EmbeddedEngine)
        two_versions(engine, identity_of(OtherHashingEmbedder()))
    finally:
        engine.close()


def test_the_sidecar_answers_409_alias_ambiguous(make_client: ClientFactory) -> None:
    other_models_behind_notes()
    answer = make_client().post("/v1/search", json={"query": "solar"})
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["kind"] == "alias_ambiguous"
    assert error["message"].startswith(REFUSED)


def test_the_mcp_search_tool_answers_a_tool_error_naming_the_indices() -> None:
    other_models_behind_notes()
    result = call_tool("search", {"query": "solar"})
    assert result.is_error
    assert REFUSED in tool_text(result)


def test_the_cli_search_refuses_naming_the_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    other_models_behind_notes()

    def hashing(settings: EmbeddingSettings) -> HashingEmbedder:
        return HashingEmbedder()

    monkeypatch.setitem(EMBEDDERS, "hashing", hashing)
    env = {"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__DIMENSION": "32"}
    result = CliRunner(env=env).invoke(main, ["search", "solar", "--index", "notes", "--engine", "embedded"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: {REFUSED}")


def test_readyz_says_the_model_check_refuses_not_that_the_engine_failed(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine answered; every search would be refused 409 alias_ambiguous, as for model_mismatch. The embedded
    # engine searches one index at a time, so its answer is what Elasticsearch and OpenSearch give: none partial.
    async def answered(self: Backend, timeout_s: float = 5.0) -> None:
        return None

    monkeypatch.setattr(Backend, "check_index", answered)
    other_models_behind_notes()
    answer = make_client().get("/readyz")
    assert answer.status_code == 503, answer.text
    checks = answer.json()["checks"]
    assert checks["engine"] == "ok"
    assert checks["index"] == "ok"
    assert checks["model"].startswith(REFUSED)
