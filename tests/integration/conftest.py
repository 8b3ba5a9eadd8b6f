from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.config import Settings, load_settings
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.profiles import MINILM
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder
from esbridge.engines import Engine, connect
from tests.integration.engines import engine_url, require_live

LIVE_ENGINES = ("opensearch", "elasticsearch")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def interfaces_embed_with_the_fixture_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Indices here are written with the ``embedder`` fixture (all-MiniLM-L6-v2 on torch, whose vectors of the
    shared data are cached); the CLI, sidecar and MCP servers the tests start must embed queries with that
    model, not the default one, or the index's model record refuses them. A test that names a model in its
    own environment still gets it."""
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__MODEL", MINILM)
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__BACKEND", "torch")


@pytest.fixture(params=LIVE_ENGINES)
def engine_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    require_live(kind)
    return kind


@pytest.fixture
def engine_settings(engine_kind: str) -> Settings:
    return load_settings(url=engine_url(engine_kind), engine=engine_kind, timeout_s=30)


@pytest.fixture
def engine(engine_settings: Settings) -> Iterator[Engine]:
    adapter = connect(engine_settings)
    yield adapter
    adapter.close()


@pytest.fixture
def index_name(engine: Engine, request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique index for one test, deleted afterwards whatever happened."""
    name = f"esbridge-test-{request.node.name.split('[')[0][5:30].replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    yield name
    engine.delete_index(name, missing_ok=True)


@pytest.fixture(scope="session")
def embedder() -> Iterator[CachedEmbedder]:
    """The real all-MiniLM-L6-v2 behind a cache that outlives the run (``ESBRIDGE_TEST_CACHE_DIR``)."""
    cache_dir = Path(
        os.environ.get("ESBRIDGE_TEST_CACHE_DIR") or Path.home() / ".cache" / "esbridge" / "test-embeddings"
    )
    model = CachedEmbedder(SentenceTransformerEmbedder(), EmbeddingCache(cache_dir))
    yield model
    model.close()


@pytest.fixture
def alias(engine: Engine) -> Iterator[str]:
    """A unique alias for one test; every version behind it is deleted afterwards."""
    name = f"esbridge-test-{uuid.uuid4().hex[:10]}"
    yield name
    for info in engine.list_indices(f"{name}*"):
        engine.delete_index(info.name, missing_ok=True)
