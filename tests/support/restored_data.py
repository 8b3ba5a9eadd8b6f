"""Embedded engines whose database or data directory is removed, moved or replaced by a copy while they run: an
engine with one index, a copy restored in its place, and what the directory holds before and after."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.store import DB_FILE

TEXT = {"body": {"type": "text"}}
VECTOR = {
    "vec": {
        "type": "knn_vector",
        "dimension": 2,
        "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"},
    }
}
NOT_OPENED = "the database {} is not the file this process opened"


@contextmanager
def opened(
    data: Path, properties: Mapping[str, Any], *documents: tuple[str, dict[str, Any]]
) -> Iterator[EmbeddedEngine]:
    """An engine on ``data`` whose index ``idx`` maps ``properties`` (k-NN on when a vector is among them) and
    holds ``documents`` (id, source), closed afterwards."""
    engine = EmbeddedEngine(data)
    try:
        knn = any(field.get("type") == "knn_vector" for field in properties.values())
        settings = {"settings": {"index.knn": True}} if knn else {}
        engine.create_index("idx", {**settings, "mappings": {"properties": dict(properties)}})
        if documents:
            assert not engine.bulk("idx", [BulkAction("index", key, source) for key, source in documents]).failed
        yield engine
    finally:
        engine.close()


def kestrel(data: Path) -> contextlib.AbstractContextManager[EmbeddedEngine]:
    """An engine on ``data`` whose index ``idx`` holds the document ``a`` ("kestrel")."""
    return opened(data, TEXT, ("a", {"body": "kestrel"}))


def search_on_a_new_thread(engine: EmbeddedEngine, words: str = "kestrel") -> BaseException | None:
    """What a search of ``idx`` for ``words`` raised on a thread of its own (one that opens its own connection)."""
    caught: list[BaseException] = []

    def search() -> None:
        try:
            engine.search("idx", {"query": {"match": {"body": words}}})
        except BaseException as exc:  # handed to the test's thread
            caught.append(exc)

    thread = threading.Thread(target=search)
    thread.start()
    thread.join()
    return caught[0] if caught else None


def hits(engine: EmbeddedEngine, words: str) -> list[str]:
    return [hit.id for hit in engine.search("idx", {"query": {"match": {"body": words}}}).hits]


def backup_database(data: Path, backup: Path) -> None:
    """A consistent copy of the database (what the write-ahead log holds too), as ``sqlite3 .backup`` makes."""
    source, target = sqlite3.connect(data / DB_FILE), sqlite3.connect(backup)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def put_database(backup: Path, data: Path) -> None:
    """``backup`` restored in place of the database (its write-ahead log and shared memory removed with it)."""
    for suffix in ("-wal", "-shm"):
        (data / (DB_FILE + suffix)).unlink(missing_ok=True)
    os.replace(backup, data / DB_FILE)


def _copy_unless_gone(source: str, destination: str) -> None:
    """A file copied, unless it went while the copy was made (a temporary file of tantivy's threads)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(source, destination)


def restore_a_copy(data: Path, what: str) -> None:
    """A backup of ``data`` (the whole directory, or its database alone) put in its place."""
    if what == "directory":
        passing = shutil.ignore_patterns(".tmp*")  # (tantivy's scratch files, renamed or removed as they are copied)
        shutil.copytree(data, data.with_name("backup"), copy_function=_copy_unless_gone, ignore=passing)
        data.rename(data.with_name("original"))  # (not removed: tantivy's threads may still write files in it)
        shutil.copytree(data.with_name("backup"), data)
    else:
        shutil.copyfile(data / DB_FILE, data.with_name("backup.sqlite3"))
        os.replace(data.with_name("backup.sqlite3"), data / DB_FILE)


def saved(data: Path) -> dict[str, bytes]:
    """The graphs and float32 copies, and what the full-text indices record as committed (segments, progress)."""
    found = [
        *(data / "vectors").rglob("*"),
        *(data / "lexical").glob("*/meta.json"),
        *(data / "lexical").glob("*/state.json"),
    ]
    return {str(path.relative_to(data)): path.read_bytes() for path in sorted(found) if path.is_file()}


def segments(data: Path) -> list[object]:
    (meta,) = (data / "lexical").glob("*/meta.json")
    found: list[object] = json.loads(meta.read_text(encoding="utf-8"))["segments"]
    return found


def files(data: Path) -> dict[str, bytes]:
    """Every file under ``data`` (its path there) and its bytes."""
    return {str(path.relative_to(data)): path.read_bytes() for path in sorted(data.rglob("*")) if path.is_file()}
