"""Lexical retrieval on tantivy: one tantivy index per esbridge index, beside the database.

``<data_dir>/lexical/<index id>-<layout digest>/`` holds the index; the digest changes when the mapping
adds fields, and a new directory is then built from the database. What each row becomes in it, field by
field, is ``lexical_layout``'s. ``state.json`` records the last change applied.

tantivy scores with BM25 at k1 = 1.2 and b = 0.75, constants in tantivy itself. The index's
``similarity.default`` b (up to 0.75) is honoured by giving each document a fixed number of extra tokens per
text field (``lengths``); its k1 is not (see docs/embedded-differences.md).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy

from esbridge.engines.embedded.analysis import NATIVE
from esbridge.engines.embedded.lengths import Lengths
from esbridge.engines.embedded.lexical_layout import ROW, TOKENIZER, Layout, separator_tokenizer
from esbridge.engines.embedded.progress import read_state, write_applied
from esbridge.engines.embedded.scalars import text_only

log = logging.getLogger(__name__)

STATE = "state.json"
META = "meta.json"
_WRITER_HEAP = 256_000_000
LEARN_FROM = 1_000
"""The documents of a write a field's mean length is learnt from (``lengths``), at most."""
COMMIT_EVERY = 100_000
"""Changes the writer gathers before it commits on its own."""
COMMIT_AFTER_S = 1.0
"""The longest a change waits in the writer while writing goes on, and the pause in writing that commits it
(the role of OpenSearch's refresh interval: other processes see a write this late at most)."""

Scored = list[tuple[int, float]]  # (database row, BM25 score), best first


class Damaged(RuntimeError):
    """tantivy cannot open a full-text directory (a file of it removed, cut short or spoilt)."""


class LexicalIndex:
    """The tantivy index of one esbridge index; writes only through the process holding the writer lock."""

    def __init__(
        self,
        folder: Path,
        layout: Layout,
        *,
        writer: bool,
        guard: Callable[[Path], None] | None = None,
        database: str | None = None,
    ) -> None:
        """``writer``: this process holds the writer lock (only then may a half-built directory be cleared).
        ``guard``: called with the folder before each commit or record of state there; raises to refuse it.
        ``database``: the database's token (``tables``), recorded with the state; one recorded beside another
        database counts as no state (the directory is built again)."""
        self.folder = folder
        self.layout = layout
        self._guard = guard or (lambda folder: None)
        self.database = database
        if not (folder / META).exists():
            (folder / STATE).unlink(missing_ok=True)  # what it records went with tantivy's record of its segments
        state = own_state(folder, database)
        self.fresh = state is None
        if self.fresh and writer and folder.exists():
            shutil.rmtree(folder)  # a build that never recorded its first state: start over
        folder.mkdir(parents=True, exist_ok=True)
        try:
            self.index = tantivy.Index(layout.schema, path=str(folder), reuse=True)
        except ValueError as exc:
            raise Damaged(
                f"the full-text index {folder} is damaged ({exc}); the next process that opens the data directory "
                "while no other process writes to it builds it again from the database"
            ) from exc
        self.index.register_tokenizer(TOKENIZER, separator_tokenizer())
        for name, analyzer in NATIVE.items():
            self.index.register_tokenizer(name, analyzer)
        self._writer: tantivy.IndexWriter | None = None
        self._lock = threading.Lock()
        self.lengths = Lengths(layout.fields.bm25_b, {})
        self.applied = self._take_state(state)
        self.held = self.applied
        """The last change in the writer: committed (``applied``) or waiting for the next ``commit``."""
        self._waiting = 0
        self._since = 0.0

    @property
    def waiting(self) -> int:
        """Changes in the writer since the last commit."""
        return self._waiting

    @property
    def dirty(self) -> bool:
        """Changes sit in the writer, invisible to searches until ``commit``."""
        return self._waiting > 0 or self.held != self.applied

    def recheck(self) -> None:
        """Read the recorded state again and search what it records (another process may have written since
        this one last looked)."""
        if self.dirty:
            return  # this process holds uncommitted changes, so it has been the writer all along
        state = own_state(self.folder, self.database)
        self.fresh = state is None
        self.applied = self.held = self._take_state(state)
        self.index.reload()  # (the state is written after the commit it records: this holds at least that)

    def built(self) -> None:
        """A first build is whole: its state is recorded now if its last commit (which recorded none) held it all,
        and by each commit from now on."""
        with self._lock:
            if self.fresh and not self.dirty:
                self._write_state(self.applied)
            self.fresh = False

    def _take_state(self, state: dict[str, Any] | None) -> int:
        """The last change the directory's ``state`` records, taking what it learnt of its fields' lengths
        (``lengths``); none recorded (a first build): 0, and the lengths this process learns."""
        if state is None:
            return 0
        self.lengths = Lengths.from_state(state, self.layout.fields.bm25_b)
        try:
            return int(state["applied"])
        except (KeyError, TypeError, ValueError):
            return 0

    def _write_state(self, applied: int) -> None:
        self._guard(self.folder)
        origin = {} if self.database is None else {"database": self.database}
        write_applied(self.folder / STATE, applied, {**self.lengths.state(), **origin})

    def apply(
        self,
        changed: Sequence[int],
        documents: Iterable[tuple[int, str, Mapping[str, Any]]],
        seq: int,
        *,
        clear: bool = False,
    ) -> None:
        """Replace the documents of rows ``changed`` (gone when not in ``documents``) and note ``seq`` as held.
        ``clear``: delete every document first (a full build over whatever a crashed build left).

        Nothing is committed here: a tantivy commit costs as much for a hundred documents as for tens of
        thousands, so the writer gathers changes until ``COMMIT_EVERY`` of them or ``COMMIT_AFTER_S`` seconds
        of them wait, or ``commit`` is called (before a search of this process, after a pause in writing, at
        close). A crash loses nothing: the change log replays what was not committed, and a first build (``fresh``)
        records no state before it is whole, so one killed part-way is built again."""
        with self._lock:
            if self._writer is None:
                self._writer = self.index.writer(heap_size=_WRITER_HEAP)
            writer = self._writer
            if clear:
                writer.delete_all_documents()
            if changed:  # (delete_documents_by_term does not match an int against a u64 field)
                writer.delete_documents_by_query(tantivy.Query.term_set_query(self.layout.schema, ROW, list(changed)))
            documents = text_only(documents, f"the full-text index {self.folder}")
            pending = self.lengths.pending(list(self.layout.text.values()))
            sample = documents[:LEARN_FROM]
            learnt = bool(pending and sample) and self.lengths.learn(self.layout.token_counts(sample, pending))
            # Recorded before the documents padded by it, so a replay pads them alike; a directory that records no
            # state yet (a build not committed whole) records none now, or it would pass for built when killed.
            if learnt and recorded(self.folder, self.database):
                self._write_state(self.applied)
            pads = self.lengths.pads
            for row, doc_id, source in documents:
                writer.add_document(self.layout.document(row, doc_id, source, pads))
            added = len(documents)
            self.held = seq
            if not self._waiting:
                self._since = time.monotonic()
            self._waiting += added + len(changed) + int(clear)
            full = self._waiting >= COMMIT_EVERY or time.monotonic() - self._since >= COMMIT_AFTER_S
        if full:
            self.commit()

    def commit(self) -> None:
        """Make the changes held in the writer durable and searchable, and record the last one."""
        with self._lock:
            if not self.dirty or self._writer is None:
                return
            self._guard(self.folder)
            self._writer.commit()
            if not self.fresh:  # a first build records no state until it is whole: killed part-way, it starts over
                self._write_state(self.held)
            self.applied = self.held
            self._waiting = 0
            self.index.reload()  # under the lock: whoever finds nothing left to commit finds it searchable too

    def searcher(self) -> tantivy.Searcher:
        return self.index.searcher()

    def top(self, query: tantivy.Query, limit: int, *, count: bool = True) -> tuple[Scored, int | None]:
        """The best ``limit`` (row, score) pairs for ``query``, and how many documents match (None unless ``count``)."""
        searcher = self.index.searcher()
        found = searcher.search(query, limit=max(limit, 1), count=count)
        hits = found.hits[:limit]
        return _rows(searcher, hits), _count(found) if count else None

    def scores(self, query: tantivy.Query) -> dict[int, float]:
        """Row -> score of every matching document."""
        searcher = self.index.searcher()
        total = _count(searcher.search(query, limit=1, count=True))
        if not total:
            return {}
        return dict(_rows(searcher, searcher.search(query, limit=total, count=False).hits))

    def count(self, query: tantivy.Query) -> int:
        return _count(self.index.searcher().search(query, limit=1, count=True))

    def num_docs(self) -> int:
        return int(self.index.searcher().num_docs)

    @property
    def removed(self) -> bool:
        """The directory was removed while this process has it open (searches still read the files it holds)."""
        return not self.folder.is_dir()

    def close(self, *, keep: bool = True) -> None:
        """Commit what the writer holds and let it go; ``keep`` false: drop it uncommitted (the database it came from
        is gone, or another file stands in its place, whose folders these changes are not for)."""
        if self.removed or not keep:
            if self.removed:  # what the writer holds has nowhere to go; the database has it
                log.warning("the full-text index %s was removed: it is built again from the database", self.folder)
            with self._lock:
                writer, self._writer = self._writer, None
            if writer is not None and not self.removed:  # its threads write nothing more in the folder once it returns
                with contextlib.suppress(ValueError, RuntimeError, OSError):
                    writer.wait_merging_threads()
            return
        self.commit()
        with self._lock:
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None


def _count(found: tantivy.SearchResult) -> int:
    total: int = found.count  # type: ignore[attr-defined]  # (missing from tantivy's stubs)
    return total


def _rows(searcher: tantivy.Searcher, hits: list[tuple[Any, tantivy.DocAddress]]) -> Scored:
    """(row, score) of each hit, the row read from its fast field."""
    if not hits:
        return []
    rows = searcher.fast_field_values(ROW, [address for _, address in hits])
    return [(int(row or 0), float(score)) for row, (score, _) in zip(rows, hits, strict=True)]


def recorded(folder: Path, database: str | None = None) -> bool:
    """The directory records its state, so holds a whole build. An unreadable record counts as none: the lengths its
    documents were padded with are lost with it, and only a new build pads every document alike."""
    return own_state(folder, database) is not None


def own_state(folder: Path, database: str | None) -> dict[str, Any] | None:
    """The directory's recorded state, unless it was recorded beside another database than ``database`` (a token,
    ``tables``; a state recorded before tokens were counts as this database's)."""
    state = read_state(folder / STATE)
    if state is not None and database is not None and state.get("database", database) != database:
        return None
    return state
