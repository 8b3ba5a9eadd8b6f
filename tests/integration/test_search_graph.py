"""Graph expansion and link re-scoring end to end on live engines, and the graph commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import Settings
from esbridge.config.pipeline import GraphSettings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.query.models import Filters, SearchRequest
from tests.integration.engines import load_records
from tests.integration.test_search import RECORDS, assert_invariants, search


@pytest.fixture
def loaded(engine: Engine, alias: str, embedder: CachedEmbedder, tmp_path: Path) -> str:
    return load_records(engine, alias, embedder, tmp_path, RECORDS)


def test_graph_expansion_brings_in_linked_documents(
    engine_settings: Settings, loaded: str, embedder: CachedEmbedder
) -> None:
    request = SearchRequest(query="photovoltaic", top_n=10, explain=True, filters=Filters(terms={"tags": ["energy"]}))
    plain = search(engine_settings, loaded, embedder, request)
    assert "grid" not in [hit.doc_id for hit in plain.results]
    expanded = search(
        engine_settings, loaded, embedder, request.model_copy(update={"filters": Filters()}),
        graph=GraphSettings(enabled=True),
    )  # fmt: skip
    assert_invariants(expanded, 10)
    by_doc = {hit.doc_id: hit for hit in expanded.results}
    assert "grid" in by_doc


def test_neighbours_reach_a_full_result_list_below_their_seeds(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    # Fifteen notes on photovoltaics, all linking to "grid": every retriever's top 12 holds only them, so
    # "grid" can only come in as a neighbour, and the direct results alone would fill the 6 places.
    records = [
        {
            "id": f"pv-{n}",
            "title": f"Photovoltaic cells {n}",
            "text": f"Photovoltaic cells, part {n}, turn sunlight into electricity.",
            "links": ["grid"],
        }
        for n in range(15)
    ]
    records.append({"id": "grid", "title": "Power grid", "text": "Transmission lines carry power between regions."})
    loaded = load_records(engine, alias, embedder, tmp_path, records)
    request = SearchRequest(query="photovoltaic cells sunlight", top_n=6, explain=True)
    plain = search(engine_settings, loaded, embedder, request)
    assert len(plain.results) == 6 and "grid" not in [hit.doc_id for hit in plain.results]

    expanded = search(engine_settings, loaded, embedder, request, graph=GraphSettings(enabled=True))
    assert_invariants(expanded, 6)
    found = {hit.doc_id: hit for hit in expanded.results}
    assert "grid" in found
    grid = found["grid"]
    assert grid.explain is not None and grid.explain.neighbour_of
    seeds = [hit for hit in expanded.results if hit.id in grid.explain.neighbour_of]
    assert seeds and all(seed.score > grid.score for seed in seeds)

    strict = GraphSettings(enabled=True, placement="below_all")
    assert "grid" not in [
        hit.doc_id for hit in search(engine_settings, loaded, embedder, request, graph=strict).results
    ]


def test_rescoring_by_links_lifts_linked_results_by_hand_and_adds_none(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
         "links": [{"id": "grid", "weight": 3}, "wind"]},
        {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate electricity.",
         "links": ["solar"]},
        {"id": "grid", "title": "Power grid", "text": "Transmission lines carry electricity between regions."},
        {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough.",
         "links": ["solar"]},
    ]  # fmt: skip
    loaded = load_records(engine, alias, embedder, tmp_path, records)
    request = SearchRequest(query="electricity from sunlight and wind", top_n=10, explain=True)
    plain = search(engine_settings, loaded, embedder, request)
    fused = {hit.doc_id: hit.explain.fused_score for hit in plain.results if hit.explain}
    assert {"solar", "wind", "grid"} <= set(fused)
    rescored = search(
        engine_settings, loaded, embedder, request,
        graph=GraphSettings(enabled=True, mode="rescore", rescore_weight=0.5),
    )  # fmt: skip
    assert_invariants(rescored, 10)
    assert {hit.doc_id for hit in rescored.results} == set(fused), "re-scoring adds and drops nothing"
    # Links between results, either way, heaviest of each document = 1: solar-grid 3, solar-wind 1, bread-solar 1.
    ties = {
        "solar": {"grid": 3.0, "wind": 1.0, "bread": 1.0},
        "wind": {"solar": 1.0},
        "grid": {"solar": 3.0},
        "bread": {"solar": 1.0},
    }
    expected = {}
    for doc in fused:
        linked = {other: weight for other, weight in ties.get(doc, {}).items() if other in fused}
        if linked:
            top = max(linked.values())
            mean = sum(w / top * fused[o] for o, w in linked.items()) / sum(w / top for w in linked.values())
            expected[doc] = 0.5 * mean
    lifts = {hit.doc_id: hit.explain.link_lift for hit in rescored.results if hit.explain}
    assert {doc: lift for doc, lift in lifts.items() if lift is not None} == pytest.approx(expected)
    order = sorted(fused, key=lambda doc: -(fused[doc] + expected.get(doc, 0.0)))
    assert [hit.doc_id for hit in rescored.results] == order
    solar = next(hit for hit in rescored.results if hit.doc_id == "solar")
    assert solar.explain is not None and solar.explain.neighbour_of[0] == "grid#0"


def test_lift_raises_results_linked_with_the_top_below_the_kept_ones(
    engine: Engine, engine_settings: Settings, alias: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = [
        {"id": "solar", "title": "Solar panels", "text": "Photovoltaic cells turn sunlight into electricity.",
         "links": [{"id": "grid", "weight": 3}, "wind"]},
        {"id": "wind", "title": "Wind turbines", "text": "Offshore wind farms generate electricity.",
         "links": ["solar"]},
        {"id": "grid", "title": "Power grid", "text": "Transmission lines carry electricity between regions."},
        {"id": "bread", "title": "Sourdough bread", "text": "A starter of flour and water leavens the dough.",
         "links": ["solar"]},
        {"id": "hydro", "title": "Hydroelectric dams", "text": "Dams turn falling water into electricity."},
    ]  # fmt: skip
    loaded = load_records(engine, alias, embedder, tmp_path, records)
    request = SearchRequest(query="electricity from sunlight and wind", top_n=10, explain=True)
    plain = search(engine_settings, loaded, embedder, request)
    fused = {hit.doc_id: hit.explain.fused_score for hit in plain.results if hit.explain}
    order = list(fused)
    assert order.index("hydro") < order.index("bread")
    graph = GraphSettings(enabled=True, mode="lift", keep_top=1, seeds=2, rescore_weight=1.0)
    lifted = search(engine_settings, loaded, embedder, request, graph=graph)
    assert_invariants(lifted, 10)
    # Links either way: solar-grid, solar-wind, bread-solar. Each result below the first gains the scores of
    # the top two it is linked with (every link counts 1).
    ties = {"solar": {"grid", "wind", "bread"}, "wind": {"solar"}, "grid": {"solar"}, "bread": {"solar"}}
    expected = {
        doc: sum(fused[seed] for seed in order[:2] if seed in ties.get(doc, set()))
        for doc in order[1:]
        if ties.get(doc, set()) & set(order[:2])
    }
    lifts = {hit.doc_id: hit.explain.link_lift for hit in lifted.results if hit.explain}
    assert {doc: lift for doc, lift in lifts.items() if lift is not None} == pytest.approx(expected)
    below = sorted(order[1:], key=lambda doc: -(fused[doc] + expected.get(doc, 0.0)))
    assert [hit.doc_id for hit in lifted.results] == [order[0], *below]
    assert below.index("bread") < below.index("hydro"), "bread, linked with a seed, passes hydro"
    # Explain reproduces each final score, with what lifting took off everything below the kept ones.
    explained = {hit.id: hit.explain for hit in lifted.results if hit.explain}
    raw = {
        item: how.fused_score * how.recency_multiplier + (how.link_lift or 0.0) - (how.link_shift or 0.0)
        for item, how in explained.items()
    }
    assert {item: max(score / max(raw.values()), 0.0) for item, score in raw.items()} == pytest.approx(
        {hit.id: hit.score for hit in lifted.results}
    )
    assert [hit.doc_id for hit in search(engine_settings, loaded, embedder, request.model_copy(update={"top_n": 1}),
                                         graph=graph).results] == order[:1]  # fmt: skip


def test_graph_commands(engine_settings: Settings, loaded: str) -> None:
    base = ["--url", engine_settings.url or "", "--index", loaded, "--json"]
    around = CliRunner().invoke(main, ["graph", "neighbors", "grid", *base])
    assert around.exit_code == 0, around.output
    assert json.loads(around.stdout)["incoming"] == {"solar": 1}
    stats = CliRunner().invoke(main, ["graph", "stats", *base])
    assert stats.exit_code == 0, stats.output
    data = json.loads(stats.stdout)
    assert data["edges"] == 1
    assert data["nodes"] >= 2
    unknown = CliRunner().invoke(main, ["graph", "neighbors", "no-such-doc", *base])
    assert unknown.exit_code == 1
    assert "no-such-doc" in unknown.output
