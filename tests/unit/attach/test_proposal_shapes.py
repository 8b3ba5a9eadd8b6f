"""``index inspect``'s proposal for mappings operators' own pipelines make: keyword titles, copy_to targets,
runtime fields and word-holding fields BM25 does not search."""

from __future__ import annotations

import pytest

from esbridge import errors
from esbridge.attach.guard import check_fields
from esbridge.attach.proposal import propose
from esbridge.config.fields import FieldMap


def test_a_keyword_title_is_proposed_as_the_title_and_a_note_says_bm25_does_not_search_it() -> None:
    proposal = propose({"properties": {"title": {"type": "keyword"}, "body": {"type": "text"}}})
    assert proposal.fields is not None
    assert proposal.fields.title == "title"
    assert proposal.fields.text == {"body": 1.0}
    said = " ".join(proposal.notes)
    assert "title is a keyword field: proposed as the title results show, but BM25 does not search it" in said
    assert not any(note.startswith("not used") for note in proposal.notes)


def test_a_keyword_name_deep_in_an_object_is_not_taken_for_the_title() -> None:
    # A log's host.name names the machine, not the document.
    proposal = propose(
        {
            "properties": {
                "@timestamp": {"type": "date"},
                "message": {"type": "match_only_text"},
                "host": {"properties": {"name": {"type": "keyword"}}},
            }
        }
    )
    assert proposal.fields is not None
    assert (proposal.fields.title, proposal.fields.date) == (None, "@timestamp")
    assert proposal.fields.text == {"message": 1.0}


def test_a_text_title_is_still_preferred_to_a_keyword_one() -> None:
    proposal = propose({"properties": {"name": {"type": "keyword"}, "headline": {"type": "text"}}})
    assert proposal.fields is not None
    assert proposal.fields.title == "headline"


def test_a_copy_to_target_is_searched_but_not_read_as_content() -> None:
    proposal = propose(
        {
            "properties": {
                "title": {"type": "text", "copy_to": "all_text"},
                "body": {"type": "text", "copy_to": ["all_text"]},
                "all_text": {"type": "text"},
            }
        }
    )
    assert proposal.fields is not None
    assert proposal.fields.text == {"title": 2.0, "body": 1.0, "all_text": 1.0}
    assert proposal.fields.content == ["body"]  # all_text is in no stored document: re-ranking would read nothing
    assert "all_text is filled by copy_to from title, body" in " ".join(proposal.notes)


def test_fields_holding_words_that_bm25_does_not_search_are_named() -> None:
    proposal = propose(
        {
            "properties": {
                "title": {"type": "search_as_you_type"},
                "labels": {"type": "flattened"},
                "body": {"type": "text"},
            }
        }
    )
    assert proposal.fields is not None
    assert proposal.fields.text == {"body": 1.0}
    assert "not searched: title (search_as_you_type), labels (flattened)" in " ".join(proposal.notes)


RUNTIME = {
    "runtime": {"state": {"type": "keyword", "script": {"source": "emit('live')"}}, "day": {"type": "date"}},
    "properties": {"title": {"type": "text"}},
}


def test_runtime_fields_are_named_as_not_used() -> None:
    proposal = propose(RUNTIME)
    assert proposal.fields is not None
    assert proposal.fields.status is None
    assert "runtime fields are not used: state (keyword), day (date)" in " ".join(proposal.notes)


def test_a_field_map_naming_a_runtime_field_is_refused_as_one_not_as_missing() -> None:
    with pytest.raises(errors.ConfigError, match=r"names runtime fields: date = 'day', status = 'state'; .*stored"):
        check_fields("logs", FieldMap(text={"title": 1.0}, status="state", date="day"), RUNTIME)


def test_text_sub_fields_with_their_own_analyzer_are_named_as_not_searched() -> None:
    proposal = propose(
        {
            "properties": {
                "title": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
                "body": {"type": "text", "fields": {"english": {"type": "text", "analyzer": "english"}}},
            }
        }
    )
    assert proposal.fields is not None
    assert proposal.fields.text == {"title": 2.0, "body": 1.0}
    assert "text sub-fields not searched: body.english (english); to search one, name it in exact" in " ".join(
        proposal.notes
    )


def test_match_only_text_is_searched_and_a_note_says_its_matches_score_alike() -> None:
    # OpenSearch 3.6 answered "electricity" over two match_only_text fields with 1.0 for each match.
    proposal = propose({"properties": {"title": {"type": "text"}, "message": {"type": "match_only_text"}}})
    assert proposal.fields is not None
    assert proposal.fields.text == {"title": 2.0, "message": 1.0}
    assert "message: match_only_text keeps no term frequencies or lengths" in " ".join(proposal.notes)


def test_a_vector_mapping_naming_no_space_is_proposed_with_the_engines_default() -> None:
    # As OpenSearch 3.6 returns a knn_vector mapped with a dimension alone: its space is l2, not unknown.
    knn = propose({"properties": {"title": {"type": "text"}, "v": {"type": "knn_vector", "dimension": 4}}})
    assert knn.fields is not None and (knn.fields.vector, knn.fields.space) == ("v", "l2")
    dense = propose({"properties": {"title": {"type": "text"}, "v": {"type": "dense_vector", "dims": 4}}})
    assert dense.fields is not None and (dense.fields.vector, dense.fields.space) == ("v", "cosine")
