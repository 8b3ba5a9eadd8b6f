"""The readable answer of `esbridge search --explain`: each result says how it got where it is."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import demo, main
from esbridge.cli.search import render, render_groups
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.query.grouping import EntityHit, RegistryGroups
from esbridge.query.models import Explain, RerankExplain, RetrieverExplain, ScoreRange, SearchHit, SearchResponse
from tests.support.hashing import RECORDS, HashingEmbedder


def _hit(item: str, score: float, explain: Explain) -> SearchHit:
    return SearchHit(id=item, doc_id=item.split("#")[0], score=score, title=item, explain=explain)


def test_explain_names_the_links_that_lifted_a_result_and_the_seeds_of_a_neighbour() -> None:
    found = {"bm25": RetrieverExplain(rank=7, score=3.5)}
    lifted = Explain(retrievers=found, fused_score=0.4, neighbour_of=["a#0", "b#2"], link_lift=0.1183)
    neighbour = Explain(neighbour_of=["a#0"], hops=2)
    plain = Explain(retrievers=found, fused_score=0.3)
    response = SearchResponse(
        query="q",
        search_mode="hybrid",
        took_ms=1.0,
        results=[_hit("c#0", 0.5, lifted), _hit("d#0", 0.4, neighbour), _hit("e#0", 0.3, plain)],
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == "       found by bm25 #7 (3.500); lifted +0.118 by links with a#0, b#2"
    assert lines[5] == "       neighbour of a#0 (2 hops)"
    assert lines[7] == "       found by bm25 #7 (3.500)"


def test_explain_says_how_far_lifting_moved_a_result_down() -> None:
    found = {"knn": RetrieverExplain(rank=12, score=0.9)}
    lifted = Explain(retrievers=found, fused_score=0.5, neighbour_of=["a#0"], link_lift=0.261, link_shift=0.25)
    shifted = Explain(retrievers=found, fused_score=0.65, link_shift=0.25)
    response = SearchResponse(
        query="q", search_mode="hybrid", took_ms=1.0, results=[_hit("c#0", 0.5, lifted), _hit("d#0", 0.4, shifted)]
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == (
        "       found by knn #12 (0.900); lifted +0.261 by links with a#0; moved down 0.250 to stay below the kept "
        "results"
    )
    assert lines[5] == "       found by knn #12 (0.900); moved down 0.250 to stay below the kept results"


def test_explain_says_what_the_re_ranker_scored_a_result() -> None:
    # Re-ranking decides the order of the head; the readable explanation said nothing of it, and then only the
    # re-ranker's score, not the score the result had before.
    found = {"bm25": RetrieverExplain(rank=4, score=0.231)}
    span = ScoreRange(low=0.0, high=1.0)
    terms = RerankExplain(
        reranker_score=0.0451, reranker_range=span, score_before=0.72, before_range=span, weight=1, combined=0, base=1
    )
    reranked = Explain(retrievers=found, fused_score=0.6, recency_multiplier=1.2, rerank_score=0.0451, reranking=terms)
    below = Explain(retrievers=found, fused_score=0.4)
    response = SearchResponse(
        query="q", search_mode="hybrid", took_ms=1.0, results=[_hit("c#0", 1.0, reranked), _hit("d#0", 0.4, below)]
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == "       found by bm25 #4 (0.231); recency x1.2; re-ranked from 0.720 by re-ranker 0.045"
    assert lines[5] == "       found by bm25 #4 (0.231)"


def test_explain_says_nothing_of_recency_where_no_multiplier_applied() -> None:
    # "recency x1" on every result with recency off (or no date, or a score of 0 it cannot change) says nothing
    # true: a multiplier of 1 is none applied, and is left out like a re-ranker score that was never computed.
    found = {"knn": RetrieverExplain(rank=5, score=0.5)}
    response = SearchResponse(
        query="q",
        search_mode="hybrid",
        took_ms=1.0,
        results=[
            _hit("c#0", 1.0, Explain(retrievers=found, fused_score=0.8, recency_multiplier=1.2)),
            _hit("d#0", 0.5, Explain(retrievers=found, fused_score=0.4)),
            _hit("e#0", 0.0, Explain(retrievers=found, fused_score=0.0)),
        ],
    )
    lines = render(response, explain=True).splitlines()
    assert lines[3] == "       found by knn #5 (0.500); recency x1.2"
    assert lines[5] == "       found by knn #5 (0.500)"
    assert lines[7] == "       found by knn #5 (0.500)"
    table = demo.render(response).splitlines()
    assert [line.split()[-1] for line in table[3:]] == ["x1.2", "-", "-"]


def test_a_search_of_the_embedded_engine_names_recency_only_where_it_multiplied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    today = datetime.now(timezone.utc).date().isoformat()
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps({**record, "modified_at": today}) for record in RECORDS), "utf-8")
    runner = CliRunner(env={"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__QUERY_PROCESSES": "0"})
    assert runner.invoke(main, ["ingest", str(records), "--index", "notes"]).exit_code == 0

    answer = json.loads(
        runner.invoke(main, ["search", "solar sunlight", "--explain", "--json", "--index", "notes"]).stdout
    )
    fused = {hit["id"]: hit["explain"]["fused_score"] for hit in answer["results"]}
    assert 0.0 in fused.values() and any(score > 0 for score in fused.values())
    lines = runner.invoke(main, ["search", "solar sunlight", "--explain", "--index", "notes"]).stdout.splitlines()
    for hit in answer["results"]:
        said = lines[lines.index(next(line for line in lines if f"[{hit['id']}]" in line)) + 1]
        if fused[hit["id"]] == 0:
            assert "recency" not in said
        else:
            assert said.endswith("; recency x1.2")  # every record is from today
    switched_off = runner.invoke(main, ["search", "solar sunlight", "--explain", "--no-recency", "--index", "notes"])
    assert switched_off.exit_code == 0 and "found by" in switched_off.stdout
    assert "recency" not in switched_off.stdout


def test_a_grouped_skill_is_printed_with_its_agent() -> None:
    groups = RegistryGroups(
        agents=[EntityHit(id="a1", name="A2ABench", score=0.8)],
        skills=[
            EntityHit(id="a1/skills/Search", name="Search", score=1.0, agent_id="a1", agent_name="A2ABench"),
            EntityHit(id="plan", name="Plan", score=0.5),  # a skill record of its own: no agent
        ],
    )
    assert render_groups(groups) == [
        "agent: 0.800  A2ABench",
        "skill: 1.000  Search  (agent A2ABench)",
        "skill: 0.500  Plan",
    ]
