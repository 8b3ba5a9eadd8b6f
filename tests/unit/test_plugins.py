"""A fusion method from a package outside esbridge, installed as a distribution with an entry point."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.plugins import FUSION_GROUP, Registry
from esbridge.query.fusion import registry as fusion_registry
from esbridge.query.models import SearchRequest
from tests.support.memory_engine import LEX, SEM, MemoryEngine, searcher

PLUGIN = '''
from esbridge.query.types import FusionResult


def reverse_bm25(runs, *, weights=None, **params):
    """Ranks BM25's list upside down: easy to tell apart from every built-in."""
    ids = list(runs.get("bm25", {}))[::-1]
    scores = {item: float(len(ids) - n) for n, item in enumerate(ids)}
    return FusionResult(scores=scores, contributions={item: {"bm25": s} for item, s in scores.items()})


def broken(runs, *, weights=None, **params):
    raise RuntimeError("never called")
'''


def install(site: Path, entry_points: str) -> None:
    """What pip leaves behind: the module and a dist-info with its entry points."""
    (site / "esbridge_reverse_fusion.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = site / "esbridge_reverse_fusion-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: esbridge-reverse-fusion\nVersion: 1.0\n", "utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


@pytest.fixture
def fresh_fusion_registry(monkeypatch: pytest.MonkeyPatch) -> Registry[object]:
    registry: Registry[object] = Registry("fusion method", FUSION_GROUP)
    monkeypatch.setattr(fusion_registry, "FUSION_METHODS", registry)
    return registry


def test_an_installed_plugin_is_selected_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fusion_registry: Registry[object]
) -> None:
    install(tmp_path, "[esbridge.fusion]\nreverse_bm25 = esbridge_reverse_fusion:reverse_bm25\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    assert {"rrf", "linear", "dbsf", "adaptive", "reverse_bm25"} <= set(fresh_fusion_registry)
    hybrid = searcher(MemoryEngine(LEX, SEM))
    response = asyncio.run(hybrid.search(SearchRequest(query="q", fusion="reverse_bm25")))
    assert [hit.id for hit in response.results] == ["c#0", "b#0", "a#0"]
    assert response.details.fusion == "reverse_bm25"


def test_a_plugin_that_fails_to_load_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fusion_registry: Registry[object]
) -> None:
    install(tmp_path, "[esbridge.fusion]\nmissing = esbridge_reverse_fusion:no_such_function\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'missing' from esbridge_reverse_fusion:no_such_function .* failed to load"):
        fresh_fusion_registry.get_named("rrf")


def test_a_plugin_that_failed_to_load_is_named_again_on_the_next_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fusion_registry: Registry[object]
) -> None:
    # A long-running process (serve, mcp) reads the registry once per request: the second read must not
    # report the built-ins that come after the broken plugin as unknown.
    install(tmp_path, "[esbridge.fusion]\naaa_missing = esbridge_reverse_fusion:no_such_function\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"'aaa_missing' from esbridge_reverse_fusion:no_such_function"):
            fresh_fusion_registry.get_named("qpp")


def test_a_plugin_with_a_built_ins_name_is_refused_by_that_name_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fusion_registry: Registry[object]
) -> None:
    # Which of two entry points of one name would win depends on the order of sys.path: refuse rather than guess.
    install(tmp_path, "[esbridge.fusion]\nrrf = esbridge_reverse_fusion:reverse_bm25\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    both = r"fusion method 'rrf' is provided twice: esbridge.query.fusion.rrf:rrf \(esbridge\) and " + (
        r"esbridge_reverse_fusion:reverse_bm25 \(esbridge-reverse-fusion\); uninstall one"
    )
    with pytest.raises(ConfigError, match=both):
        fresh_fusion_registry.get_named("rrf")
    assert callable(fresh_fusion_registry.get_named("linear"))


def test_built_ins_come_from_esbridges_own_entry_points(fresh_fusion_registry: Registry[object]) -> None:
    from importlib.metadata import entry_points

    declared = {point.name for point in entry_points(group=FUSION_GROUP) if point.value.startswith("esbridge.")}
    assert declared == {"rrf", "linear", "dbsf", "adaptive", "qpp"}
    assert declared <= set(fresh_fusion_registry)


def test_the_embedder_comes_from_its_registry() -> None:
    from esbridge.config.settings import EmbeddingSettings
    from esbridge.embeddings.factory import EMBEDDERS, open_embedder
    from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder

    assert EMBEDDERS.get_named("sentence-transformers") == SentenceTransformerEmbedder.from_settings
    with pytest.raises(ConfigError, match=r"unknown embedder 'nope'; known: .*sentence-transformers"):
        open_embedder(EmbeddingSettings(provider="nope"))


def test_a_registered_retriever_runs_beside_the_built_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    from esbridge.query.retrievers import RETRIEVERS, RetrievalContext

    class ExactTitle:
        needs_vector = False

        def body(self, context: RetrievalContext, vector: object) -> dict[str, object]:
            return {"size": context.top_k, "query": {"term": {"title.raw": context.query}}}

    saved = dict(RETRIEVERS)
    RETRIEVERS.register("exact_title", ExactTitle())

    class WithExactTitle(MemoryEngine):
        async def search(self, index: str, body: dict[str, Any]) -> Any:  # type: ignore[override]
            if "term" in body.get("query", {}):
                from esbridge.engines.base import Hit, SearchResult

                return SearchResult([Hit("c#0", 5.0, {"doc_id": "c"})], 1, 0)
            return await super().search(index, body)

    try:
        hybrid = searcher(WithExactTitle(LEX, SEM), retrievers=["bm25", "knn", "exact_title"])
        response = asyncio.run(hybrid.search(SearchRequest(query="C", explain=True)))
    finally:
        RETRIEVERS.clear()
        RETRIEVERS.update(saved)
    assert response.search_mode == "hybrid"
    explained = {hit.id: hit.explain for hit in response.results}
    assert explained["c#0"] is not None and set(explained["c#0"].retrievers) == {"bm25", "exact_title"}


def test_a_plugin_that_declares_context_gets_the_query_and_the_candidates_texts(
    fresh_fusion_registry: Registry[object],
) -> None:
    from esbridge.query.fusion import FusionContext, fusion_traits, register_fusion
    from esbridge.query.fusion.linear import linear
    from esbridge.query.fusion.result import ranked
    from esbridge.query.types import FusionResult, Runs
    from tests.support.memory_engine import doc

    seen: list[FusionContext] = []

    @fusion_traits(reads_texts=True)
    def phrase_bonus(
        runs: Runs, *, weights: Any = None, context: FusionContext | None = None, **params: Any
    ) -> FusionResult:
        assert context is not None
        seen.append(context)
        fused = linear(runs, weights=weights, **params)
        query = context.query.lower()
        bonus = {item: 2.0 for item in fused.scores if query in context.text(item).lower()}
        return ranked({item: score + bonus.get(item, 0.0) for item, score in fused.scores.items()}, fused.contributions)

    register_fusion("phrase_bonus", phrase_bonus)
    sources = {item: doc(item[0], body="about wind") for item, _ in LEX + SEM}
    sources["c#0"] = doc("c", body="all about solar panels")
    engine = MemoryEngine(LEX, SEM, sources)
    response = asyncio.run(searcher(engine).search(SearchRequest(query="Solar Panels", fusion="phrase_bonus")))
    # c is last in BM25 and absent from kNN: only the bonus its body earns puts it first
    assert response.results[0].id == "c#0"
    assert seen[0].query == "Solar Panels"
    assert seen[0].request is not None and seen[0].request.fusion == "phrase_bonus"
    assert "all about solar panels" in seen[0].text("c#0")
