from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from esbridge.ingest.beir import read_beir_corpus
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.record_links import RecordLinks, read_links, resolve_links
from tests.support.data import CISI, require


@pytest.mark.parametrize(
    ("record", "targets", "weights"),
    [
        ({"links": ["b", 7, "b"]}, ("b", "7"), {}),
        ({"links": [{"id": "b", "weight": 3}, "c", {"id": "b", "weight": 2}]}, ("b", "c"), {"b": 3.0}),
        ({"links": ["b", "c"], "link_weights": {"b": 0.5}}, ("b", "c"), {"b": 0.5}),
        ({"metadata": {"links": ["b"], "link_weights": {"b": 4}}}, ("b",), {"b": 4.0}),
        # The top level wins over metadata, key by key.
        ({"links": ["x"], "metadata": {"links": ["b"], "link_weights": {"x": 2}}}, ("x",), {"x": 2.0}),
        ({"links": None, "metadata": None}, (), {}),
        ({}, (), {}),
    ],
)
def test_links_and_weights_from_the_top_level_or_metadata(
    record: dict[str, Any], targets: tuple[str, ...], weights: dict[str, float]
) -> None:
    assert read_links(record) == RecordLinks(targets, weights)


@pytest.mark.parametrize(
    ("record", "weights", "warnings"),
    [
        (  # the link object's own weight is the more specific one
            {"links": [{"id": "b", "weight": 5}], "metadata": {"link_weights": {"b": 2}}},
            {"b": 5.0},
            ("link 'b' weighs 5 in 'links' and 2 in 'metadata.link_weights'; kept the link's own weight",),
        ),
        (
            {"links": [{"id": "b", "weight": 0.5}, "c"], "link_weights": {"b": 3, "c": 4}},
            {"b": 0.5, "c": 4.0},
            ("link 'b' weighs 0.5 in 'links' and 3 in 'link_weights'; kept the link's own weight",),
        ),
        ({"links": [{"id": "b", "weight": 2}], "link_weights": {"b": 2}}, {"b": 2.0}, ()),  # they agree
        ({"links": [{"id": "b"}], "link_weights": {"b": 2}}, {"b": 2.0}, ()),  # an object without a weight
    ],
)
def test_a_link_objects_own_weight_wins_over_link_weights(
    record: dict[str, Any], weights: dict[str, float], warnings: tuple[str, ...]
) -> None:
    links = read_links(record)
    assert (links.weights, links.warnings) == (weights, warnings)


def test_a_jsonl_record_whose_link_weights_disagree_says_so(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    records = [
        {"id": "a", "text": "x", "links": [{"id": "b", "weight": 5}], "metadata": {"link_weights": {"b": 2}}},
        {"id": "b", "text": "y"},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    a, b = read_jsonl(path)
    assert isinstance(a, Document) and isinstance(b, Document)
    assert a.link_weights == {"b": 5.0}
    assert a.warnings == ("link 'b' weighs 5 in 'links' and 2 in 'metadata.link_weights'; kept the link's own weight",)
    assert b.warnings == ()


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"links": "b"}, "field 'links': expected a list"),
        ({"links": [""]}, "field 'links[0]': a link target must be a non-empty string or an integer, got string ''"),
        ({"links": [{"id": "b", "weight": 0}]}, "field 'links[0].weight': a link weight must be a finite number > 0"),
        ({"links": [{"id": "b", "weight": True}]}, "got true"),
        ({"links": [{"id": "b", "w": 1}]}, "unknown key 'w'"),
        ({"links": [{"weight": 2}]}, "field 'links[0].id'"),
        ({"links": ["b"], "link_weights": {"c": 2}}, "weight given for 'c', which is not in the links"),
        ({"links": ["b"], "link_weights": ["b"]}, "field 'link_weights': expected an object"),
        ({"metadata": {"links": ["b"], "link_weights": {"b": -1}}}, "field 'metadata.link_weights.b'"),
    ],
)
def test_malformed_links_name_the_field(record: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        read_links(record)


def test_a_weight_too_large_for_a_float_is_a_problem_of_its_record(tmp_path: Path) -> None:
    # JSON integers have no size limit; 10**400 cannot become a float, and once crashed the whole ingest.
    path = tmp_path / "records.jsonl"
    lines = [
        {"id": "a", "text": "A", "links": [{"id": "b", "weight": 10**400}]},
        {"id": "b", "text": "B", "links": ["a"], "link_weights": {"a": 10**400}},
        {"id": "c", "text": "C", "links": [{"id": "d", "weight": 10**300}]},
        {"id": "d", "text": "D"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    items = list(read_jsonl(path))
    problems = [item for item in items if isinstance(item, Problem)]
    assert [(problem.line, problem.doc_id) for problem in problems] == [(1, "a"), (2, "b")]
    assert "field 'links[0].weight': a link weight must be a finite number > 0, got number 1000" in problems[0].reason
    assert "field 'link_weights.a': a link weight must be a finite number > 0" in problems[1].reason
    assert all(len(problem.reason) < 200 for problem in problems)
    kept = {item.doc_id: item for item in items if isinstance(item, Document)}
    assert (kept["c"].links, kept["c"].link_weights) == (("d",), {"d": 1e300})


def test_a_link_to_a_record_with_a_problem_stays_a_link(tmp_path: Path) -> None:
    # "a" keeps what was indexed for it (the problem names its id); "b", which is fine, keeps its link to it.
    path = tmp_path / "records.jsonl"
    path.write_text(
        '{"id": "a", "text": "A", "links": [{"id": "b", "weight": -1}]}\n'
        '{"id": "b", "text": "B", "links": [{"id": "a", "weight": 5}, "nowhere"]}\n',
        encoding="utf-8",
    )
    items = list(read_jsonl(path))
    assert [(item.line, item.doc_id) for item in items if isinstance(item, Problem)] == [(1, "a")]
    [b] = [item for item in items if isinstance(item, Document)]
    assert (b.links, b.link_weights, b.metadata) == (("a",), {"a": 5.0}, {"unresolved_links": ["nowhere"]})


def test_resolving_keeps_known_targets_with_weights_and_records_the_rest() -> None:
    links = RecordLinks(("a", "self", "gone", "b"), {"a": 2.0, "gone": 5.0})
    resolved = resolve_links("self", links, {"a", "b", "self"})
    assert resolved.links == ("a", "b")
    assert resolved.weights == {"a": 2.0}
    assert resolved.metadata == {"unresolved_links": ["gone"], "unresolved_link_weights": {"gone": 5.0}}


def test_jsonl_records_carry_weighted_links_and_a_bad_one_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(
        '{"id": "a", "text": "A", "links": [{"id": "b", "weight": 3}, "c"], "metadata": {"kind": "x"}}\n'
        '{"id": "b", "text": "B", "metadata": {"links": ["a"], "link_weights": {"a": 3}}}\n'
        '{"id": "c", "text": "C", "links": ["a"], "link_weights": {"a": -2}}\n',
        encoding="utf-8",
    )
    items = list(read_jsonl(path))
    documents = {item.doc_id: item for item in items if isinstance(item, Document)}
    problems = [item for item in items if isinstance(item, Problem)]
    assert documents["a"].links == ("b", "c")
    assert documents["a"].link_weights == {"b": 3.0}
    assert documents["a"].metadata == {"kind": "x"}
    assert (documents["b"].links, documents["b"].link_weights, documents["b"].metadata) == (("a",), {"a": 3.0}, {})
    assert [(problem.line, problem.doc_id) for problem in problems] == [(3, "c")]
    assert "field 'link_weights.a': a link weight must be a finite number > 0, got number -2" in problems[0].reason


def test_beir_corpus_links_are_resolved_like_jsonl(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"_id": "1", "text": "one", "links": ["2", "9"], "metadata": {"link_weights": {"2": 4, "9": 2}, "y": 1}}\n'
        '{"_id": "2", "text": "two", "metadata": {"links": ["1"]}}\n',
        encoding="utf-8",
    )
    documents = [item for item in read_beir_corpus(folder) if isinstance(item, Document)]
    assert [(doc.links, dict(doc.link_weights)) for doc in documents] == [(("2",), {"2": 4.0}), (("1",), {})]
    assert documents[0].metadata == {"y": 1, "unresolved_links": ["9"], "unresolved_link_weights": {"9": 2.0}}


def test_a_document_refuses_weights_for_targets_it_does_not_link() -> None:
    with pytest.raises(ValueError, match="not one of the document's links"):
        Document(doc_id="a", title="", sections=(), links=("b",), link_weights={"c": 2.0})


def test_the_real_cisi_corpus_keeps_every_co_citation_with_its_weight() -> None:
    documents = [item for item in read_beir_corpus(require(CISI)) if isinstance(item, Document)]
    assert len(documents) == 1460
    edges = sum(len(doc.links) for doc in documents)
    assert edges == 2 * 38672  # undirected co-citations, stored from both ends (SOURCE.md)
    first = documents[0]
    assert first.links == ("92", "262", "556", "1004", "1024")
    assert first.link_weights == {}  # every weight is 1
    raw = [json.loads(line) for line in (CISI / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    given = {record["_id"]: record["metadata"]["link_weights"] for record in raw}
    for doc in documents:
        assert {target: doc.link_weights.get(target, 1.0) for target in doc.links} == given[doc.doc_id]
    assert max(weight for doc in documents for weight in doc.link_weights.values()) == 16.0
    assert "links" not in first.metadata and "link_weights" not in first.metadata
    assert first.metadata["times_cited"] == 5


def test_a_different_copy_of_the_links_under_metadata_is_kept_there_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        {"id": "p", "text": "P", "links": ["q"], "metadata": {"links": ["r"], "link_weights": {"q": 2}, "k": 1}},
        {"id": "q", "text": "Q", "links": ["p"], "metadata": {"links": ["p"]}},
        {"id": "r", "text": "R", "link_weights": {}, "links": ["p"], "metadata": {"link_weights": {"p": 3}}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    documents = {item.doc_id: item for item in read_jsonl(path) if isinstance(item, Document)}
    # The top level still wins for the graph; the copy it shadows stays in metadata when it says something else.
    assert (documents["p"].links, documents["p"].link_weights) == (("q",), {"q": 2.0})
    assert documents["p"].metadata == {"links": ["r"], "k": 1}
    assert (documents["q"].links, documents["q"].metadata) == (("p",), {})
    assert (documents["r"].links, documents["r"].link_weights) == (("p",), {})
    assert documents["r"].metadata == {"link_weights": {"p": 3}}
