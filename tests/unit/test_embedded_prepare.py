"""One-shot callers (the command line's search, eval and bench) wait for an embedded index being built whole
before they search, where a serving process's searches fail at once with ``index_unavailable``."""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.config import load_settings
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine, builds
from esbridge.mappings.lifecycle import IndexManager
from esbridge.query.api import search
from esbridge.query.models import SearchRequest
from tests.contract.records import CHUNKS, PARAMS
from tests.support.guard import holding_the_guard


@pytest.fixture
def unbuilt(tmp_path: Path) -> Path:
    """A data directory holding an esbridge index ``notes`` whose full-text index is gone: built whole again."""
    engine = EmbeddedEngine(tmp_path)
    try:
        IndexManager(engine, "notes", PARAMS).create()
        assert not engine.bulk("notes", [BulkAction("index", key, chunk) for key, chunk in CHUNKS.items()]).failed
    finally:
        engine.close()
    shutil.rmtree(tmp_path / "lexical")
    return tmp_path


def test_prepare_waits_for_a_build_longer_than_a_search_waits_and_says_so(
    unbuilt: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(builds, "PATIENCE_S", 0.05)
    engine = EmbeddedEngine(unbuilt)
    searching = AsyncEmbeddedEngine(engine=engine)
    body = {"size": 10, "query": {"match": {"body": "lenses"}}}
    try:
        with holding_the_guard(engine) as release, caplog.at_level(logging.WARNING):
            threading.Timer(0.5, release.set).start()  # the build can start half a second from now
            asyncio.run(searching.prepare("notes"))
        found = asyncio.run(searching.search("notes", body))
    finally:
        engine.close()
    assert [hit.id for hit in found.hits] == ["astro#0"]
    waiting = [record.getMessage() for record in caplog.records if "waiting for it" in record.getMessage()]
    assert waiting
    assert all("is not ready" in message for message in waiting)
    assert not any("failed" in message for message in waiting)  # the search waits and answers: nothing failed


def test_prepare_leaves_other_errors_to_the_search(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    searching = AsyncEmbeddedEngine(engine=engine)
    try:
        asyncio.run(searching.prepare("missing"))
        with pytest.raises(errors.IndexNotFound):
            asyncio.run(searching.search("missing", {"query": {"match_all": {}}}))
    finally:
        engine.close()


def test_a_one_shot_search_answers_from_an_index_being_built(unbuilt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builds, "PATIENCE_S", 0.0)  # every build outlasts a search's patience
    settings = load_settings(data_dir=unbuilt, index="notes")
    response = search(settings, SearchRequest(query="lenses for viewing"), None, model_problem="no model here")
    assert [hit.id for hit in response.results][:1] == ["astro#0"]
