"""What every engine must score alike: BM25 weighs a document's length in a field by the index's
``similarity.default`` b. Lucene does so natively; the embedded engine pads each document (``lengths``). Mixed
into the engine contract classes, which provide ``engine`` and ``prefix``."""

from __future__ import annotations

import pytest

from esbridge.engines.base import BulkAction, Engine

K1 = 1.2
# "apple" once in bodies of 4, 8 and 12 words; a fourth body without it keeps its IDF finite. Mean length 8.
BODIES = {"short": "apple x y z", "middle": "apple " + "y " * 7, "long": "apple " + "z " * 11, "other": "pear " * 8}
LENGTHS = {"short": 4, "middle": 8, "long": 12}
MEAN = 8.0


def saturation(length: int, b: float) -> float:
    """BM25's score of one occurrence, up to the factors every document shares (IDF, k1 + 1)."""
    return 1.0 / (1.0 + K1 * (1.0 - b + b * length / MEAN))


class ScoringContract:
    @pytest.mark.parametrize("b", [0.2, 0.4, 0.75])
    def test_bm25_weighs_length_by_the_index_b(self, engine: Engine, prefix: str, b: float) -> None:
        index = f"{prefix}-b{round(b * 100)}"
        similarity = {"default": {"type": "BM25", "k1": K1, "b": b}}
        settings = {"index": {"number_of_shards": 1, "number_of_replicas": 0, "similarity": similarity}}
        mappings = {"properties": {"body": {"type": "text", "analyzer": "standard"}}}
        engine.create_index(index, {"settings": settings, "mappings": mappings})
        assert (
            list(engine.bulk(index, [BulkAction("index", key, {"body": text}) for key, text in BODIES.items()]).failed)
            == []
        )
        engine.refresh(index)
        # Written later, the same length as "middle", keeping the mean at 8: it must score as "middle" does.
        assert list(engine.bulk(index, [BulkAction("index", "later", {"body": BODIES["middle"]})]).failed) == []
        engine.refresh(index)

        found = engine.search(index, {"size": 10, "query": {"match": {"body": "apple"}}})
        scores = {hit.id: hit.score for hit in found.hits}
        assert sorted(scores) == ["later", "long", "middle", "short"]
        for key in ("short", "long"):
            expected = saturation(LENGTHS[key], b) / saturation(LENGTHS["middle"], b)
            assert scores[key] / scores["middle"] == pytest.approx(expected, rel=1e-4), key
        assert scores["later"] == pytest.approx(scores["middle"], rel=1e-5)
        for text, holding in (("pear", ["other"]), ("", [])):  # (the embedded engine pads with empty tokens)
            hits = engine.search(index, {"size": 10, "query": {"match": {"body": text}}}).hits
            assert [hit.id for hit in hits] == holding
