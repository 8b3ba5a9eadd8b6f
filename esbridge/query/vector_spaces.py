"""The query vector a kNN request sends, given the vector field's space.

The embedder's vector is sent as it is (unit length or not, as ``[embedding] normalize`` says) except to an
Elasticsearch ``dot_product`` field, which refuses any query vector that is not unit length (HTTP 400, ``The
[dot_product] similarity can only be used with unit-length vectors``) and holds only unit document vectors
(it refuses others when they are written). There the vector is scaled to unit length: dividing the query by
its norm divides every dot product by the same positive number, so the order is the one the embedder's
vector would give. Every other space keeps the vector: for ``l2``/``l2_norm`` its length changes which
documents are nearest, and for the cosine and inner-product spaces scaling it changes no order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

UNIT_QUERY_SPACES = frozenset({"dot_product"})
"""Elasticsearch spaces that refuse a query vector that is not unit length."""


def query_vector(space: str | None, vector: Sequence[float]) -> list[float]:
    """``vector`` as a kNN request on a field of ``space`` must send it (see the module docstring).

    A zero vector has no direction and is returned as it is, for the engine to refuse."""
    if space not in UNIT_QUERY_SPACES:
        return list(vector)
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return list(vector)
    return [x / norm for x in vector]
