"""Two writes of one document at once, on the embedded engine: the document ends as one of them, whole."""

from __future__ import annotations

import threading
from typing import Any

from fastapi.testclient import TestClient

from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.jsonl import JsonlRecord, record_document
from esbridge.service import documents
from tests.support.hashing import HashingEmbedder

LONG = {"id": "doc", "title": "long", "text": " ".join(f"Sentence {n} about solar panels." for n in range(400))}
SHORT = {"id": "doc", "title": "short", "text": "One short sentence."}
API = {"source": "api"}


class PausingEngine(EmbeddedEngine):
    """The real embedded engine; the short write's thread pauses right after reading the chunks the document
    had, so that the long write can land in between."""

    short_thread: threading.Thread | None = None
    paused = threading.Event()
    resume = threading.Event()

    def scan(self, *args: Any, **kwargs: Any) -> Any:
        hits = list(super().scan(*args, **kwargs))
        if threading.current_thread() is self.short_thread and not self.paused.is_set():
            self.paused.set()
            self.resume.wait(5)
        return iter(hits)


def test_two_upserts_of_one_document_at_once_leave_one_of_them_whole(client: TestClient) -> None:
    engine = PausingEngine.from_settings(load_settings())
    try:
        short, long = (
            threading.Thread(target=documents.upsert, args=(engine, "notes", HashingEmbedder(), [record]), kwargs=API)
            for record in (SHORT, LONG)
        )
        PausingEngine.short_thread = short
        short.start()
        assert PausingEngine.paused.wait(5)
        long.start()
        long.join(1.0)  # done at once without a lock; with one it waits for the short write
        PausingEngine.resume.set()
        short.join(10)
        long.join(10)
        hits = engine.search("notes", {"size": 100, "query": {"term": {"doc_id": "doc"}}}).hits
    finally:
        engine.close()
    titles = {hit.source["title"] for hit in hits}
    assert len(titles) == 1, f"chunks of both writes: {sorted(hit.id for hit in hits)}"
    long_document = record_document(JsonlRecord.model_validate(LONG), set())
    expected = 1 if titles == {"short"} else len(documents._chunks(long_document))
    assert len(hits) == expected
