"""The embedded engine's BM25 length normalisation: the index's b through padding (``lengths``), learnt once and
kept across processes; full-text directories written before padding keep tantivy's b. The scores against
Lucene's formula on every engine are in the contract suite (``tests/contract/scoring.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, lengths
from esbridge.engines.embedded.lexical import STATE, LexicalIndex
from esbridge.engines.embedded.lexical_layout import Layout
from esbridge.engines.embedded.mapping import created_schema
from esbridge.errors import RequestRejected
from tests.contract.scoring import BODIES, LENGTHS, saturation

MAPPINGS = {"properties": {"body": {"type": "text", "analyzer": "standard"}}}


def _settings(b: object) -> dict[str, object]:
    return {"index": {"similarity": {"default": {"type": "BM25", "b": b}}}}


@contextmanager
def _engine(root: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(root)
    try:
        yield engine
    finally:
        engine.close()


def _write(engine: EmbeddedEngine, documents: dict[str, str]) -> None:
    assert (
        list(engine.bulk("idx", [BulkAction("index", key, {"body": text}) for key, text in documents.items()]).failed)
        == []
    )
    engine.refresh("idx")


def _ratios(engine: EmbeddedEngine) -> dict[str, float]:
    hits = engine.search("idx", {"size": 10, "query": {"match": {"body": "apple"}}}).hits
    scores = {hit.id: hit.score for hit in hits}
    return {key: score / scores["middle"] for key, score in scores.items()}


def _expected(b: float) -> dict[str, float]:
    return {key: saturation(length, b) / saturation(LENGTHS["middle"], b) for key, length in LENGTHS.items()}


def _state(root: Path) -> tuple[Path, dict[str, Any]]:
    (path,) = root.glob(f"lexical/*/{STATE}")
    return path, json.loads(path.read_text())


@pytest.mark.parametrize(
    ("mean", "b", "tokens"),
    [(72.4, 0.4, 63), (8.0, 0.4, 7), (8.0, 0.2, 22), (10.0, 0.75, 0), (10.0, 0.9, 0), (10.0, 0.0, 140), (0.0, 0.4, 0)],
)
def test_pad_length_turns_tantivy_b_into_the_index_b(mean: float, b: float, tokens: int) -> None:
    # 8 * (0.75 / 0.2 - 1) = 22; b 0 is taken as LOWEST_B: 10 * (0.75 / 0.05 - 1) = 140.
    assert lengths.pad_length(mean, b) == tokens


def test_learnt_lengths_outlive_the_process_and_pad_later_documents_alike(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        engine.create_index("idx", {"settings": _settings(0.4), "mappings": MAPPINGS})
        _write(engine, BODIES)
    _, state = _state(tmp_path)
    assert state["b"] == 0.4
    assert state["lengths"] == {"t0": 8.0}
    with _engine(tmp_path) as engine:
        _write(engine, {"later": BODIES["middle"]})
        ratios = _ratios(engine)
    assert ratios["later"] == pytest.approx(1.0, rel=1e-5)
    for key, expected in _expected(0.4).items():
        assert ratios[key] == pytest.approx(expected, rel=1e-4)


def test_a_directory_written_before_padding_keeps_tantivy_b(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lengths, "pad_length", lambda mean, b: 0)  # as esbridge wrote it before: no pad words
    with _engine(tmp_path) as engine:
        engine.create_index("idx", {"settings": _settings(0.4), "mappings": MAPPINGS})
        _write(engine, BODIES)
    path, state = _state(tmp_path)
    path.write_text(json.dumps({"applied": state["applied"]}))  # and recorded no lengths
    monkeypatch.undo()
    with _engine(tmp_path) as engine:
        _write(engine, {"later": BODIES["middle"]})  # padded now, it would score below "middle"
        ratios = _ratios(engine)
    assert ratios["later"] == pytest.approx(1.0, rel=1e-5)
    for key, expected in _expected(0.75).items():
        assert ratios[key] == pytest.approx(expected, rel=1e-4)
    assert "lengths" not in _state(tmp_path)[1]


def test_a_directory_whose_state_cannot_be_read_is_built_again_and_padded_alike(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        engine.create_index("idx", {"settings": _settings(0.4), "mappings": MAPPINGS})
        _write(engine, BODIES)
    path, _ = _state(tmp_path)
    path.write_text("")  # (a power cut after the state's rename, before its data reached the disk)
    with _engine(tmp_path) as engine:
        _write(engine, {"later": BODIES["middle"]})  # unpadded, as in a directory of b 0.75, it would outscore "middle"
        ratios = _ratios(engine)
    assert ratios["later"] == pytest.approx(1.0, rel=1e-5)
    for key, expected in _expected(0.4).items():
        assert ratios[key] == pytest.approx(expected, rel=1e-4)
    assert _state(tmp_path)[1]["lengths"] == {"t0": 8.0}


def test_lengths_are_recorded_before_the_documents_they_pad_are_committed(tmp_path: Path) -> None:
    settings = _settings(0.4)["index"]
    assert isinstance(settings, dict)
    layout = Layout(created_schema(MAPPINGS, settings))
    text = LexicalIndex(tmp_path / "text", layout, writer=True)
    text.built()  # an empty index, whole
    documents = [(row, key, {"body": body}) for row, (key, body) in enumerate(BODIES.items())]
    text.apply([], documents, seq=4)
    recorded = json.loads((tmp_path / "text" / STATE).read_text())
    assert recorded == {"b": 0.4, "lengths": {"t0": 8.0}, "applied": 0}  # a replay from change 0 pads alike
    text.close()
    assert json.loads((tmp_path / "text" / STATE).read_text())["applied"] == 4


def test_a_build_killed_before_its_last_commit_is_built_again_though_a_later_write_learnt_a_length(
    tmp_path: Path,
) -> None:
    settings = _settings(0.4)["index"]
    assert isinstance(settings, dict)
    mappings = {"properties": {"body": MAPPINGS["properties"]["body"], "title": {"type": "text"}}}
    layout = Layout(created_schema(mappings, settings))
    text = LexicalIndex(tmp_path / "text", layout, writer=True)
    documents = [(row, key, {"body": body}) for row, (key, body) in enumerate(BODIES.items())]
    text.apply([], documents, seq=4, clear=True)
    text.built()  # whole, its last changes waiting in the writer for the next commit
    text.apply([9], [(9, "titled", {"title": "a first title"})], seq=5)  # the first length of "title"
    # Killed here, before any commit: had the state been recorded, the directory would pass for built (from
    # change 0) without the build's documents, and only the change log, trimmed long ago, would be replayed.
    after_kill = LexicalIndex(tmp_path / "text", layout, writer=False)
    assert after_kill.fresh
    text.close()
    assert json.loads((tmp_path / "text" / STATE).read_text()) == {
        "b": 0.4,
        "lengths": {"t0": 8.0, "t1": 3.0},
        "applied": 5,
    }


@pytest.mark.parametrize("b", ["often", 1.5, True])
def test_a_b_that_is_not_a_number_from_0_to_1_is_refused(tmp_path: Path, b: object) -> None:
    with _engine(tmp_path) as engine, pytest.raises(RequestRejected, match=r"similarity\.default\.b"):
        engine.create_index("idx", {"settings": _settings(b), "mappings": MAPPINGS})


def test_a_similarity_the_engine_cannot_score_with_is_refused_at_creation(tmp_path: Path) -> None:
    boolean = {"index": {"similarity": {"default": {"type": "boolean"}}}}
    per_field = {"properties": {"body": {"type": "text", "fields": {"std": {"type": "text", "similarity": "BM25"}}}}}
    with _engine(tmp_path) as engine:
        with pytest.raises(RequestRejected, match=r"scores text with BM25, not 'boolean'"):
            engine.create_index("idx", {"settings": boolean, "mappings": MAPPINGS})
        with pytest.raises(RequestRejected, match=r"field 'body\.std': similarity 'BM25'"):
            engine.create_index("idx", {"mappings": per_field})
        engine.create_index("idx", {"settings": _settings(0.4), "mappings": MAPPINGS})  # the default, named or not
        with pytest.raises(RequestRejected, match=r"field 'notes': similarity 'boolean'"):
            engine.put_mapping("idx", {"notes": {"type": "text", "similarity": "boolean"}})
        engine.put_mapping("idx", {"notes": {"type": "text", "similarity": "default"}})
        assert sorted(engine.get_mapping("idx")["properties"]) == ["body", "notes"]
