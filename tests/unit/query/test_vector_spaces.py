"""The query vector a kNN request sends per vector space, with hand-computed values."""

from __future__ import annotations

import pytest

from esbridge.config.fields import FieldMap
from esbridge.query.bodies import knn_body
from esbridge.query.models import Filters
from esbridge.query.vector_spaces import query_vector


def test_a_dot_product_query_is_sent_at_unit_length() -> None:
    assert query_vector("dot_product", [3.0, 4.0]) == pytest.approx([0.6, 0.8])
    assert query_vector("dot_product", [0.0, -2.0, 0.0]) == pytest.approx([0.0, -1.0, 0.0])
    assert query_vector("dot_product", [0.6, 0.8]) == pytest.approx([0.6, 0.8])


@pytest.mark.parametrize("space", [None, "l2", "cosinesimil", "innerproduct", "l2_norm", "cosine", "max_inner_product"])
def test_other_spaces_send_the_embedders_vector_as_it_is(space: str | None) -> None:
    # l2: the length decides which documents are nearest ([2, 0] is nearer [3, 0] than [1, 0] is)
    assert query_vector(space, [3.0, 4.0]) == [3.0, 4.0]


def test_a_zero_vector_is_left_for_the_engine_to_refuse() -> None:
    assert query_vector("dot_product", [0.0, 0.0]) == [0.0, 0.0]


def test_an_elasticsearch_dot_product_knn_body_holds_the_unit_vector() -> None:
    fields = FieldMap(text={"body": 1.0}, vector="emb", dimension=2, space="dot_product")
    body = knn_body("elasticsearch", [3.0, 4.0], k=5, filters=Filters(), num_candidates=10, fields=fields)
    assert body["knn"]["query_vector"] == pytest.approx([0.6, 0.8])
    cosine = FieldMap(text={"body": 1.0}, vector="emb", dimension=2, space="cosine")
    body = knn_body("elasticsearch", [3.0, 4.0], k=5, filters=Filters(), num_candidates=10, fields=cosine)
    assert body["knn"]["query_vector"] == [3.0, 4.0]
    inner = FieldMap(text={"body": 1.0}, vector="emb", dimension=2, space="innerproduct")
    body = knn_body("opensearch", [3.0, 4.0], k=5, filters=Filters(), num_candidates=10, fields=inner)
    assert body["query"]["knn"]["emb"]["vector"] == [3.0, 4.0]
