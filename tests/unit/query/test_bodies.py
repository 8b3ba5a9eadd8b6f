"""Retriever bodies per dialect, checked without a server (the live behaviour: tests/integration)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.query import bodies
from esbridge.query.bodies import bm25_body, filter_query, knn_body, links_body
from esbridge.query.models import Filters

# every lifecycle status in the casings notes write it in
LIFECYCLE = {
    "terms": {
        "status": [
            *("deprecated", "DEPRECATED", "Deprecated"),
            *("draft", "DRAFT", "Draft"),
            *("disabled", "DISABLED", "Disabled"),
        ]
    }
}


def test_filters_become_terms_and_ranges_and_lifecycle_is_excluded() -> None:
    filters = Filters(
        terms={"tags": ["energy", "infra"], "entity_type": ["note"]},
        modified_after=datetime(2026, 1, 1, tzinfo=timezone.utc),
        created_before=datetime(2026, 6, 1, tzinfo=timezone.utc),
    )
    assert filter_query(filters) == {
        "bool": {
            "filter": [
                {"terms": {"entity_type": ["note"]}},
                {"terms": {"tags": ["energy", "infra"]}},
                {"range": {"modified_at": {"gte": "2026-01-01T00:00:00+00:00"}}},
                {"range": {"created_at": {"lte": "2026-06-01T00:00:00+00:00"}}},
            ],
            "must_not": [LIFECYCLE],
        }
    }


def test_lifecycle_switches_let_states_back_in() -> None:
    assert filter_query(Filters(include_draft=True))["bool"]["must_not"] == [
        {"terms": {"status": ["deprecated", "DEPRECATED", "Deprecated", "disabled", "DISABLED", "Disabled"]}}
    ]
    everything = Filters(include_deprecated=True, include_draft=True, include_disabled=True)
    assert "must_not" not in filter_query(everything)["bool"]


def test_asking_for_a_lifecycle_status_lets_it_in_and_status_matches_any_casing() -> None:
    query = filter_query(Filters(terms={"status": ["Deprecated", "in progress"]}))["bool"]
    assert query["filter"] == [
        {
            "terms": {
                "status": [
                    *("Deprecated", "deprecated", "DEPRECATED"),
                    *("in progress", "IN PROGRESS", "In progress", "In Progress"),
                ]
            }
        }
    ]
    assert query["must_not"] == [{"terms": {"status": ["draft", "DRAFT", "Draft", "disabled", "DISABLED", "Disabled"]}}]


def test_inverted_date_ranges_are_refused() -> None:
    with pytest.raises(ValueError, match=r"modified_after .* is later than modified_before"):
        Filters(
            modified_after=datetime(2022, 6, 30, tzinfo=timezone.utc),
            modified_before=datetime(2022, 1, 1, tzinfo=timezone.utc),
        )


def test_unknown_filter_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot filter on"):
        Filters(terms={"body": ["x"]})


def test_elasticsearch_bm25_is_combined_fields_with_boosts_at_least_one() -> None:
    fields = DEFAULT_FIELD_MAP.model_copy(update={"text": {"title": 3, "body": 0.5}})
    body = bm25_body("elasticsearch", "solar power", size=20, filters=Filters(), fields=fields)
    should = body["query"]["bool"]["should"]
    assert should[0] == {"combined_fields": {"query": "solar power", "fields": ["title^3", "body"]}}
    assert should[1]["multi_match"] == {
        "query": "solar power",
        "type": "best_fields",
        "fields": ["path.text^2", "code"],
    }
    assert body["query"]["bool"]["minimum_should_match"] == 1
    assert body["query"]["bool"]["must_not"] == [LIFECYCLE]
    assert body["size"] == 20
    assert "vector" not in body["_source"]


def test_opensearch_bm25_is_cross_fields() -> None:
    body = bm25_body("opensearch", "solar", size=10, filters=Filters())
    grouped = body["query"]["bool"]["should"][0]["multi_match"]
    assert grouped["type"] == "cross_fields"
    assert grouped["fields"][:3] == ["title^1.5", "aliases^2.5", "headings^2"]


def test_user_text_stays_a_json_value() -> None:
    text = 'title:(x) OR *:* AND {"script": "boom"}'
    body = bm25_body("opensearch", text, size=10, filters=Filters())
    assert body["query"]["bool"]["should"][0]["multi_match"]["query"] == text
    assert body["query"]["bool"]["should"][1]["multi_match"]["query"] == text


def test_knn_filters_go_inside_the_knn_clause() -> None:
    filters = Filters(terms={"tags": ["energy"]})
    os_body = knn_body("opensearch", [0.1, 0.2], k=20, filters=filters, num_candidates=100)
    clause = os_body["query"]["knn"]["vector"]
    assert clause["k"] == 20 and clause["method_parameters"] == {"ef_search": 100}
    assert clause["filter"] == filter_query(filters)
    es_body = knn_body("elasticsearch", [0.1, 0.2], k=20, filters=filters, num_candidates=10)
    assert es_body["knn"]["num_candidates"] == 20, "never fewer candidates than k"
    deep = knn_body("elasticsearch", [0.1, 0.2], k=6000, filters=filters, num_candidates=12_000)
    assert deep["knn"]["num_candidates"] == 10_000, "Elasticsearch refuses more"
    assert es_body["knn"]["filter"] == filter_query(filters)
    assert "query" not in es_body
    with pytest.raises(ValueError, match="k must be positive"):
        knn_body("opensearch", [0.1], k=0, filters=filters, num_candidates=10)


def test_links_body_asks_for_seeds_and_their_linkers_in_one_request() -> None:
    body = links_body(["a", "b"], size=100, filters=Filters())
    assert body["query"]["bool"]["should"] == [{"terms": {"doc_id": ["a", "b"]}}, {"terms": {"links": ["a", "b"]}}]
    assert body["query"]["bool"]["minimum_should_match"] == 1


@pytest.mark.parametrize(
    ("direction", "clause"), [("out", {"terms": {"doc_id": ["a"]}}), ("in", {"terms": {"links": ["a"]}})]
)
def test_links_body_for_one_direction_reads_first_chunks_by_document_id(direction: str, clause: dict[str, Any]) -> None:
    body = links_body(["a"], size=100, filters=Filters(), direction=direction)  # type: ignore[arg-type]
    assert "should" not in body["query"]["bool"]
    assert clause in body["query"]["bool"]["filter"]
    assert {"term": {"chunk_index": 0}} in body["query"]["bool"]["filter"]
    assert body["sort"] == [{"doc_id": "asc"}]


def test_a_query_within_the_clause_limit_is_sent_as_it_is() -> None:
    text = "How do co-citation links help? " * 3
    assert bodies.bounded_text(text, fields=7) == text


def test_a_query_over_the_clause_limit_keeps_its_distinct_words_in_order() -> None:
    # 6 words x 2 fields = 12 clauses > 10: repeats go first, leaving "the cat sat on mat" (5 x 2 = 10).
    assert bodies.bounded_text("The cat sat on the mat", fields=2, max_clauses=10) == "the cat sat on mat"
    # Still over after that: cut from the end, to 10 // 3 = 3 words.
    assert bodies.bounded_text("The cat sat on the mat", fields=3, max_clauses=10) == "the cat sat"


def test_each_ideograph_counts_as_a_word_against_the_clause_limit() -> None:
    # The standard tokenizer makes 8 words of these 8 characters: 8 x 2 = 16 clauses > 10, cut to 10 // 2 = 5.
    assert bodies.bounded_text("天地玄黄宇宙洪荒", fields=2, max_clauses=10) == "天 地 玄 黄 宇"
    assert bodies.bounded_text("ひらがな", fields=2, max_clauses=10) == "ひらがな"  # 4 x 2 = 8 fit
    assert bodies.bounded_text("solar天地", fields=3, max_clauses=10) == "solar天地"  # 3 x 3 = 9 fit


def test_a_katakana_run_is_a_word_apart_from_the_letters_it_touches() -> None:
    # OpenSearch's standard tokenizer: "Pythonプログラム" is two words, "aア" * 400 is 800, U+3007 U+3005 two.
    assert bodies.bounded_text("Pythonプログラム" * 3, fields=2, max_clauses=10) == "python プログラム"  # 6 x 2 > 10
    assert bodies.bounded_text("aア" * 400, fields=2, max_clauses=10) == "a ア"
    assert bodies.bounded_text("\u3007\u3005" * 3, fields=2, max_clauses=10) == "\u3007 \u3005"  # 〇々


def test_bm25_body_sends_a_long_query_shortened() -> None:
    text = " ".join(f"word{index}" for index in range(400))
    body = bodies.bm25_body("opensearch", text, size=10, filters=Filters())
    sent = body["query"]["bool"]["should"][0]["multi_match"]["query"]
    fields = len(bodies.DEFAULT_TEXT_BOOSTS) + len(bodies.DEFAULT_EXACT_BOOSTS)
    assert sent.split() == [f"word{index}" for index in range(bodies.MAX_CLAUSES // fields)]
    assert bodies.bm25_text(text) == sent


def test_bm25_without_exact_fields_sends_no_clause_for_them() -> None:
    fields = DEFAULT_FIELD_MAP.model_copy(update={"exact": {}})
    body = bm25_body("opensearch", "solar", size=5, filters=Filters(), fields=fields)
    assert len(body["query"]["bool"]["should"]) == 1
    with pytest.raises(ValueError, match="at least one text field"):
        FieldMap(text={})
