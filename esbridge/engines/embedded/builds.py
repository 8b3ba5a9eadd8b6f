"""Bringing an index up to date when that takes long: work a search need not wait for.

Most of what ``DataDir.ready`` applies before a search is a few changes. Some catch-ups take far longer
than a search's timeout: a full-text index whose layout was never built whole (a mapping that added a
field, a build killed part-way, an index made by an esbridge that laid it out otherwise) or a graph whose
file is gone is built again from the database, seconds per ten thousand chunks and minutes at a million;
a process that only searches applies the graph changes of another process's large ingest at about 2,000 a
second. Every other search of the index would queue behind it and time out too, none saying why. Such a
catch-up runs on a thread of its own. A caller that serves searches under a deadline waits for it
``patience_s`` and otherwise gets ``Building`` at once, naming the index, what is being done and for how
long, while the work goes on; other callers (ingest, export, the command line's reads) wait for it to end,
logging what they wait for once that takes longer than a search waits.
Closing the data directory waits for the work under way, so that a command that stops early leaves a
full-text index whole for the next one.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from esbridge.engines.embedded import ann, lexical, lexical_folders
from esbridge.engines.embedded.ann import VectorIndex
from esbridge.engines.embedded.lexical import LexicalIndex
from esbridge.engines.embedded.lexical_layout import Layout
from esbridge.engines.embedded.progress import read_applied
from esbridge.engines.embedded.store import IndexRecord

T = TypeVar("T")
log = logging.getLogger(__name__)

PATIENCE_S = 2.0
"""How long a search under a deadline waits for a build before it is told the index is being built: a
small index is built within it and its first search answers as usual."""


BEHIND = 5_000
"""Changes the index's graphs may lack before catching up counts as slow (a process that only searches applies
another process's writes to its graphs in memory: about 2,000 a second at a million chunks)."""


class Building(Exception):
    """The index is being brought up to date from the database; searches of it answer once that is done."""

    def __init__(self, name: str, what: str, started: float) -> None:
        elapsed = time.monotonic() - started
        super().__init__(
            f"index [{name}] is not ready: the embedded engine is {what} ({elapsed:.0f} s so far); searches of it "
            "answer once that is done"
        )


def slow_work(
    root: Path,
    db: sqlite3.Connection,
    record: IndexRecord,
    text: LexicalIndex | None,
    graphs: Mapping[str, VectorIndex],
    *,
    changes: bool = True,
    database: str | None = None,
) -> str | None:
    """What bringing the index up to date would take long for, given the structures this process has for it
    (``text`` None: none yet): a structure to build whole from the database, or (``changes``) many changes to
    apply; None when there are only a few changes to apply. ``database``: its token (``lexical.own_state``)."""
    parts = []
    layout = Layout(record.schema)
    if text is None or text.layout.digest != layout.digest:
        if not lexical.recorded(lexical_folders.folder_for(root, record.id, layout), database):
            parts.append("its full-text index")
    elif text.fresh:
        parts.append("its full-text index")
    applied = []
    for field in record.schema.vector_fields:
        graph = graphs.get(field.path)
        path = ann.path_for(root, record.id, field.path)
        if not path.exists() if graph is None else not graph.built:
            parts.append(f"the graph of [{field.path}]")
        else:
            applied.append(graph.applied if graph is not None else read_applied(path.with_suffix(".json")) or 0)
    if parts:
        documents = db.execute("SELECT count(*) FROM docs WHERE index_id = ?", (record.id,)).fetchone()[0]
        return f"building {' and '.join(parts)} from its database, {documents:,} documents"
    if applied and changes:
        query = "SELECT count(*) FROM changes WHERE index_id = ? AND seq > ?"
        behind = db.execute(query, (record.id, min(applied))).fetchone()[0]
        if behind > BEHIND:
            return f"applying {behind:,} changes to its graphs, written since they were last brought up to date"
    return None


@dataclass
class _Build:
    name: str
    what: str
    started: float
    future: Future[Any]
    told: bool = False
    """Someone was told it is under way (a search, with ``Building``; or the log, by a caller that waits)."""


def _result(build: _Build, patience_s: float | None) -> Any:
    """The build's result within ``patience_s`` (None: to the end, saying what it waits for once that takes
    longer than ``PATIENCE_S``, unless a search was told already)."""
    if patience_s is None and not build.told:
        try:
            return build.future.result(timeout=PATIENCE_S)
        except FutureTimeout:
            build.told = True
            log.warning("index [%s]: the embedded engine is %s; waiting for it", build.name, build.what)
    try:
        return build.future.result(timeout=patience_s)
    except FutureTimeout:
        build.told = True
        raise Building(build.name, build.what, build.started) from None


class Builds:
    """The builds of one data directory, one at a time on a thread of their own, at most one per index."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, _Build] = {}
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="esbridge-build")

    def run(self, index_id: int, name: str, what: str, work: Callable[[], T], *, patience_s: float | None) -> T:
        """What ``work`` returns, run on the build thread unless a build of the index is under way already (then
        that build's result); ``Building`` when it is not done within ``patience_s`` (None: wait to the end).
        A build that has ended serves only the callers that were waiting for it: a later call starts anew, so
        it neither gets what an earlier catch-up brought up (the index may have changed since) nor an earlier
        failure."""
        with self._lock:
            build = self._running.get(index_id)
            if build is None or build.future.done():
                build = self._running[index_id] = _Build(name, what, time.monotonic(), self._thread.submit(work))
        try:
            result = _result(build, patience_s)
        finally:
            if build.future.done():
                with self._lock:
                    if self._running.get(index_id) is build:
                        del self._running[index_id]
        return result  # type: ignore[no-any-return]  # (the build under way ran this work, or work like it)

    def close(self) -> None:
        """Wait for the builds under way and queued, then stop the thread."""
        with self._lock:
            waiting = [build for build in self._running.values() if not build.future.done()]
        for build in waiting:
            log.warning("waiting for the embedded engine to finish %s for index [%s]", build.what, build.name)
        self._thread.shutdown(wait=True)
