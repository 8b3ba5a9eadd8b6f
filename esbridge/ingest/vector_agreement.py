"""Whether the vectors an index holds were made by a given model, read from the vectors themselves.

An index made before esbridge recorded models in ``_meta`` says nothing about its model. Its vectors do:
the same model embeds the same text to the same vector (cosine 0.98 or more across torch, ONNX fp32 and
int8, docs/models.md), while two different models put it in unrelated spaces (cosine near 0). So the
stored vectors of a few chunks are compared with the model's vectors of the texts they were made from;
the lowest cosine decides (``esbridge.embeddings.identity.SAME_MODEL_COSINE``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from esbridge import errors
from esbridge.embeddings.base import Embedder, passage_vectors
from esbridge.engines.base import Engine
from esbridge.ingest.documents import EMBEDDED, EMBEDDING_SOURCE_FIELDS, chunk_from_source
from esbridge.mappings.schema import VECTOR_FIELD

SAMPLE = 3
TEXT_FIELDS = ("title", "headings", "body")
"""What a chunk's embedding text is made of: two chunks equal in these have the same model's same vector."""


def sample_body(size: int = SAMPLE) -> dict[str, object]:
    """The request for ``size`` stored chunks that have a vector, with their vector and embedding text."""
    return {
        "size": size,
        "query": {"term": {"embedding": EMBEDDED}},
        "_source": [*EMBEDDING_SOURCE_FIELDS, VECTOR_FIELD],
    }


def agreement(engine: Engine, index: str, embedder: Embedder) -> float | None:
    """The lowest cosine between a few stored vectors of ``index`` and ``embedder``'s vectors of the same
    texts; None when the index holds no vector to compare (or only ones of texts with nothing to embed).
    ``DimensionMismatch`` when its vectors have another dimension than the embedder's."""
    hits = [hit for hit in engine.search(index, sample_body()).hits if hit.source.get(VECTOR_FIELD)]
    if not hits:
        return None
    stored = {len(hit.source[VECTOR_FIELD]) for hit in hits}
    if stored != {embedder.dimension}:  # no cosine to compare: say so rather than "cosine 0.00"
        raise errors.DimensionMismatch(
            f"index {index} records no embedding model, and holds {max(stored)}-dimensional vectors, which the "
            f"model {embedder.name} ({embedder.dimension}-dimensional) cannot have made. Use the model that made "
            "them ([embedding] model), or ingest into a new index (--index NAME) with this one"
        )
    # A chunk with nothing to embed (stored with a vector before such chunks were left without one) tells nothing.
    fresh = passage_vectors(embedder, [chunk_from_source(hit.source).embedding_text for hit in hits])
    cosines = [cosine(hit.source[VECTOR_FIELD], vector) for hit, vector in zip(hits, fresh, strict=True) if vector]
    return min(cosines) if cosines else None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """cos(a, b); 0 when either is the zero vector or their lengths differ."""
    if len(a) != len(b):
        return 0.0
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norms if norms > 0 else 0.0


def export_agreement(
    engine: Engine, index: str, chunks: Iterable[Mapping[str, Any]], *, batch: int = 100, batches: int = 10
) -> float | None:
    """The lowest cosine between a few stored vectors of ``index`` and an export's vectors of the same chunks (the
    same id and text), so without a model; None when none of the export's first ``batch * batches`` chunks with a
    vector is in the index with one."""
    with_vectors = (chunk for chunk in chunks if isinstance(chunk.get(VECTOR_FIELD), list) and "_id" in chunk)
    cosines: list[float] = []
    for _ in range(batches):
        exported = {str(chunk["_id"]): chunk for chunk in islice(with_vectors, batch)}
        if not exported:
            break
        body = {
            "size": len(exported),
            "query": {"bool": {"filter": [{"term": {"embedding": EMBEDDED}}, {"terms": {"chunk_id": list(exported)}}]}},
            "_source": [*TEXT_FIELDS, VECTOR_FIELD],
        }
        for hit in engine.search(index, body).hits:
            chunk, stored = exported.get(hit.id), hit.source.get(VECTOR_FIELD)
            if chunk is not None and stored and all(chunk.get(f) == hit.source.get(f) for f in TEXT_FIELDS):
                cosines.append(cosine(stored, chunk[VECTOR_FIELD]))
        if len(cosines) >= SAMPLE:
            break
    return min(cosines) if cosines else None
