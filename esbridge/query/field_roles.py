"""What an index's field map means for one search: the features it turns off, the fields each retriever searches.

Pure functions over the field map (``esbridge.config.fields``) and the request; the orchestrator puts
their answers in ``details.off``, ``warnings`` and each result's explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

from esbridge.config.fields import FieldMap
from esbridge.query import bodies
from esbridge.query.models import SearchRequest


@dataclass(frozen=True)
class Off:
    """Features the field map turns off (feature -> reason), and warnings for those the request asked for."""

    features: dict[str, str]
    asked: tuple[str, ...]


def features_off(fields: FieldMap, request: SearchRequest) -> Off:
    """The features ``fields`` turns off; those ``request`` asked for by name (``--graph``, ``--recency``, a
    kNN weight) become warnings too."""
    features = fields.off()
    asked = {
        "knn": request.weights is not None and request.weights.get("knn", 0) > 0,
        "recency": bool(request.recency),
        "graph": bool(request.graph),
    }
    warnings = tuple(f"{name} is off: {reason}" for name, reason in features.items() if asked.get(name))
    return Off({str(name): reason for name, reason in features.items()}, warnings)


def searched_fields(fields: FieldMap) -> dict[str, list[str]]:
    """The index's fields each retriever searches, with their boosts, as explanations name them."""
    text = [*bodies.boosted(fields.text), *bodies.boosted(fields.exact)]
    vector = [fields.vector] if fields.vector else []
    return {"bm25": text, "knn": vector, "native": [*text, *vector]}
