"""An attached index's vector space: the field map's against the live mapping's (``check_space``)."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge import errors
from esbridge.attach.guard import check_space
from esbridge.attach.proposal import propose
from esbridge.config.fields import FieldMap


def _mapping(definition: dict[str, Any]) -> dict[str, Any]:
    return {"properties": {"title": {"type": "text"}, "meta": {"properties": {"emb": definition}}}}


def _fields(space: str | None) -> FieldMap:
    return FieldMap(text={"title": 1.0}, vector="meta.emb", dimension=3, space=space)


DOT = {"type": "dense_vector", "dims": 3, "index": True, "similarity": "dot_product"}
LUCENE_IP = {"type": "knn_vector", "dimension": 3, "method": {"engine": "lucene", "space_type": "innerproduct"}}


@pytest.mark.parametrize(
    ("definition", "space"),
    [
        (DOT, "dot_product"),
        (LUCENE_IP, "innerproduct"),
        ({"type": "knn_vector", "dimension": 3, "space_type": "cosinesimil"}, "cosinesimil"),
        ({"type": "knn_vector", "dimension": 3}, "l2"),  # each engine's default, which get_mapping leaves out
        ({"type": "dense_vector", "dims": 3}, "cosine"),
    ],
)
def test_a_field_map_without_a_space_takes_the_mappings(definition: dict[str, Any], space: str) -> None:
    fields = _fields(None)
    assert check_space("products", fields, _mapping(definition)).space == space
    assert fields.space is None  # the settings given are not changed in place
    same = _fields(space)
    assert check_space("products", same, _mapping(definition)) is same


def test_a_field_map_naming_another_space_than_the_mappings_is_refused_naming_both() -> None:
    with pytest.raises(errors.ConfigError) as refused:
        check_space("products", _fields("cosine"), _mapping(DOT))
    message = str(refused.value)
    assert "[fields.products] says meta.emb has space 'cosine'" in message
    assert "the index maps it with 'dot_product'" in message and 'set space = "dot_product"' in message


def test_no_vector_field_or_engine_side_embedding_is_not_checked() -> None:
    lexical = FieldMap(text={"title": 1.0})
    assert check_space("products", lexical, _mapping(DOT)) is lexical
    engine = FieldMap(text={"title": 1.0}, vector="meta.emb", query_embedding="engine", model_id="e5", space="x")
    assert check_space("products", engine, _mapping(DOT)) is engine


def test_a_knn_vector_made_from_a_trained_model_has_no_space_to_check_and_the_proposal_says_so() -> None:
    # Its space is the trained model's, which the mapping does not give: not OpenSearch's default l2.
    trained = {"type": "knn_vector", "model_id": "ivf-ip"}
    proposal = propose({"properties": {"title": {"type": "text"}, "emb": trained}})
    assert proposal.fields is not None and proposal.fields.space is None
    assert any("gives no space for emb" in note and "set space" in note for note in proposal.notes)
    fields = FieldMap(text={"title": 1.0}, vector="meta.emb", space="innerproduct")
    assert check_space("products", fields, _mapping(trained)) is fields
