"""What a process keeps for one data directory and the database file there, shared by the engines it opens on them
(``shared_dirs``).

The writer lock (``<data_dir>/writer.lock``, an advisory ``flock`` the kernel drops when the process dies):
the first write takes it and the process keeps it until its last engine on the directory closes; a second
process that tries to write gets ``WriterBusy`` naming the holder, while reading stays open to all (a process
that only searches holds the lock only while it indexes what a killed writer left uncommitted). The
tantivy indices and HNSW graphs live here once per process, and ``ready`` brings them up to date from the
database's change log: the writer applies changes to tantivy and commits; every process applies them to
its graphs in memory. Writes therefore never reload anything whole, and a crash at any point is repaired by
the next process to open the directory, which replays the changes the indices had not recorded.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from esbridge.engines.embedded import ann, catch_up, changelog, database_file, lexical, lexical_folders, text_commits
from esbridge.engines.embedded.ann import VectorIndex
from esbridge.engines.embedded.backfill import Backfills, mark_new_copies
from esbridge.engines.embedded.builds import Builds, slow_work
from esbridge.engines.embedded.handles import Handles, IndexGone
from esbridge.engines.embedded.lexical import COMMIT_AFTER_S, LexicalIndex
from esbridge.engines.embedded.lexical_layout import Layout
from esbridge.engines.embedded.store import DB_FILE, IndexRecord, Store
from esbridge.engines.embedded.under_way import Before, WritesUnderWay
from esbridge.engines.embedded.writer import WriterBusy, WriterLock

SAVE_EVERY = 200_000
"""Changes a graph takes in memory before it is written to its file again."""
COMMIT_AT_ONCE_BELOW = 1_000
"""A write that leaves fewer full-text changes waiting commits them before it returns; larger ones gather."""

log = logging.getLogger(__name__)


class DataDir:
    """The structures of one data directory for the database file ``opened`` there (``shared_dirs``)."""

    def __init__(self, root: Path, opened: tuple[int, int] | None, token: str | None = None) -> None:
        """``opened``: the database file's identity; ``token``: its ``origin`` token (``tables``)."""
        self.root = root
        self.opened = opened
        self.token = token
        self._database = root / DB_FILE
        self.users = 0
        self._retired = False
        self._writer = WriterLock(root)
        self._guard = threading.RLock()
        self._handles: dict[int, Handles] = {}
        self._filters: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._filters_lock = threading.Lock()  # (searches fill it outside ``_guard``)
        self._workers = ThreadPoolExecutor(1, thread_name_prefix="esbridge-graphs")
        self._backfills = Backfills(self._workers)
        self._builds = Builds()
        self.under_way = WritesUnderWay()
        self._later = text_commits.LaterCommit(self._commit_all)
        self._swept = False

    # The writer lock

    @property
    def writing(self) -> bool:
        return self._writer.held

    def hold_writer(self, store: Store) -> None:
        """Take the writer lock for this process, or raise WriterBusy naming the process that has it (or the
        database's problem). Once taken, structures that record changes past the database's last are dropped
        (``catch_up.ahead``), before a write gives its own changes those numbers."""
        with self._guard:
            if not self.writing:
                self._take_writer()
                for index_id in catch_up.ahead(self.root, store.db):
                    self.forget(index_id)  # (built again from the database)

    def refuse_unless_current(self, what: str) -> None:
        """Raise ``what`` and why, unless the database at the directory's path is the file this ``DataDir`` is for
        (and no engine of this process has opened another one there since: ``retire``)."""
        problem = database_file.problem(self._database, self.opened)
        if problem is None and self._retired:
            problem = database_file.Problem(self._database, "replaced")
        if problem is not None:
            raise sqlite3.OperationalError(f"{what}: {problem}")

    def retire(self) -> None:
        """Give back the writer lock and tantivy's writers, their changes dropped, for good: the database file
        was replaced and an engine of this process opened the new one (``shared_dirs``), which may write now."""
        with self._guard:
            self._retired = True
            for found in self._handles.values():
                found.lexical.close(keep=False)
            self._writer.release()

    def _take_writer(self) -> None:
        self.refuse_unless_current("cannot write")
        self._writer.take()

    def _try_writer(self) -> bool:
        """The writer lock for a catch-up, unless another process has it (``hold_writer`` without its sweep)."""
        with self._guard, contextlib.suppress(WriterBusy):
            self._take_writer()
        return self.writing

    # Structures per index

    def ready(
        self, store: Store, record: IndexRecord, *, searching: bool = True, patience_s: float | None = None
    ) -> Handles:
        """The index's tantivy index and graphs, with every committed change applied; for a search (not a
        write) the full-text changes the writer holds are committed first, so a search sees every write. A
        full-text index another process is still building is looked at again by each search until it is whole.
        A search waits ``patience_s`` (None: to the end) for a structure built whole (``builds``; a write waits to
        the end), but not for the graph updates of the last writes (a few thousand rows at most, else ``builds``):
        it scores the rows they are adding exactly (``behind``)."""
        found = self._handles.get(record.id)
        before = self.under_way.before(record.id, record.generation) if searching and found is not None else None
        if before is not None and found is not None and before.serves(found.generation, found.lexical.fresh):
            return self._beside_write(store, found, before)
        if found is None or found.generation != record.generation or found.lexical.fresh:
            text, graphs = (found.lexical, found.vectors) if found else (None, {})
            # A write waits for a build on the build thread too, so that it says what it waits for when that is long
            # (its graphs lag by the last write's changes, which it waits for as it always does).
            building = slow_work(self.root, store.db, record, text, graphs, changes=searching, database=self.token)
            if building is not None:
                found = self._builds.run(
                    record.id,
                    record.name,
                    building,
                    lambda: self._caught_up(store, record, wait=searching),
                    patience_s=patience_s,
                )
            else:
                found = self._caught_up(store, record, wait=False)
        if searching:
            if found.growing and all(update.done() for update in found.growing):
                with self._guard:
                    found.settle()  # (raises what a finished update raised)
            text_commits.commit(store, found.lexical)
        elif found.lexical.waiting < COMMIT_AT_ONCE_BELOW:
            found.lexical.commit()  # a few changes: visible at once, the way a small write is expected to be
        else:
            self._later.after(COMMIT_AFTER_S, store)  # (when writing pauses: other processes see the writes then)
        return found

    def _beside_write(self, store: Store, found: Handles, before: Before) -> Handles:
        """The structures for a search while a bulk write of this process is under way (``under_way``); the write
        itself settles the graph updates (under ``_guard``, which it holds while it brings the structures up)."""
        if found.lexical.applied < before.text:  # a write that returned left text uncommitted
            text_commits.commit(store, found.lexical)
        return found

    def writing_to(self, record: IndexRecord) -> contextlib.AbstractContextManager[None]:
        """Around a bulk write to ``record``'s index, from inside its transaction until it returns."""
        found = self._handles.get(record.id)
        current = found is not None and found.generation == record.generation and not found.lexical.fresh
        before = Before(record.generation, found.lexical.held) if found is not None and current else None
        return self.under_way.writing(record.id, before)

    def behind(
        self, store: Store, record: IndexRecord, handles: Handles, path: str
    ) -> dict[int, npt.NDArray[np.float32] | None]:
        """The rows written since the graph of ``path`` last completed an update (none when no update is under
        way), with their vectors as the database has them now (None when deleted or without one)."""
        if not handles.growing:
            return {}
        rows = changelog.changed(store.db, record.id, handles.vectors[path].applied)
        found: dict[int, npt.NDArray[np.float32] | None] = dict.fromkeys(rows)
        for row, blob in store.vector_blobs(rows, path):
            found[row] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _commit_all(self, store: Store) -> None:
        with self._guard:
            text_commits.commit_all(store, [(found.name, found.lexical) for found in self._handles.values()])

    def _caught_up(self, store: Store, record: IndexRecord, *, wait: bool) -> Handles:
        with self._guard:
            found = self._handles.get(record.id)
            if found is not None and found.generation >= record.generation and not found.lexical.fresh:
                return found  # brought up while this thread waited (by the write's own refresh)
            return self._catch_up(store, record, wait=wait)

    def _catch_up(self, store: Store, record: IndexRecord, *, wait: bool) -> Handles:
        """Apply the changes logged since the structures were last current. The graphs grow in a worker
        thread while tantivy indexes in this one; after a write (``wait`` false) they go on growing while
        the caller prepares its next write, and the next write or search waits for them first.

        A process that does not write takes the writer lock only to index changes no writer holds (a killed
        writer's, a full-text index to build) and gives it back once they are committed, so that it never
        refuses the next writer; it also lets go of the indices other processes deleted."""
        problem = store.problem()  # (this thread's connection may read a database since replaced by a copy, whose
        if problem is not None:  # folders a catch-up would fill, build anew or remove from what that one holds)
            raise sqlite3.OperationalError(f"index [{record.name}] was not brought up to date: {problem}")
        borrowing = not self.writing
        current = store.index(record.name)
        if current is not None and current.id == record.id:
            record = current  # not one read before a mapping change, whose old layout would be built again
        try:
            if record.id not in self._drop_deleted(store):
                raise IndexGone(record.name)  # (rather than build anything for it)
            return self._bring_up(store, record, wait=wait, borrowing=borrowing)
        finally:
            if borrowing and self.writing:
                self._give_back()

    def _bring_up(self, store: Store, record: IndexRecord, *, wait: bool, borrowing: bool) -> Handles:
        layout = Layout(record.schema)
        found = self._handles.get(record.id)
        if found is None or found.lexical.layout.digest != layout.digest or found.lexical.removed:
            if found is not None:
                found.lexical.close()
            folder = lexical_folders.folder_for(self.root, record.id, layout)
            vectors = {
                field.path: VectorIndex(ann.path_for(self.root, record.id, field.path), field.dimension, self.token)
                for field in record.schema.vector_fields
            }
            fresh = not lexical.recorded(folder, self.token)
            guard, token = self._text_guard, self.token
            try:
                writer = self._try_writer() if fresh else self.writing
                text = LexicalIndex(folder, layout, writer=writer, guard=guard, database=token)
            except lexical.Damaged as exc:
                if not self._try_writer():
                    raise
                log.warning("index [%s]: building its full-text index again from the database: %s", record.name, exc)
                shutil.rmtree(folder)
                text = LexicalIndex(folder, layout, writer=True, guard=guard, database=token)
            found = Handles(-1, text, vectors, name=record.name)
            self._handles[record.id] = found
        found.settle()
        if self.writing:
            store.empty_log()  # (now, while the graph worker reads nothing)
        db = store.db
        latest = changelog.latest(db, record.id)
        text = found.lexical
        found.growing = [
            self._workers.submit(self._apply_vectors, store, record, path, graph)
            for path, graph in found.vectors.items()
        ]
        try:
            if (text.fresh or text.held != latest) and self._try_writer():
                text.recheck()  # this process may have read the state before another writer moved it
                if not text.fresh and catch_up.out_of_step(db, record.id, text.held):  # (no writer moves either now)
                    text = found.lexical = catch_up.text_built_again(record, text, self._text_guard)
                rebuilt = text.fresh
                catch_up.apply_text(store, record, text)
                if rebuilt:  # a new layout (the mapping changed) or a first build: earlier layouts are stale
                    self.refuse_unless_current(f"index [{record.name}] was not brought up to date")
                    lexical_folders.remove_all(self.root, record.id, keep=text.folder)
            else:
                text.recheck()  # and search what the writer has committed since
        finally:
            if wait:
                found.settle()
        found.generation = record.generation
        if self.writing and not borrowing:  # only the writer writes copies: it fills in those never written
            self._backfills.start(store, record.id, record.name, found.vectors)
        return found

    def _give_back(self) -> None:
        """Release a writer lock taken to catch an index up: tantivy's writers first (each holds tantivy's own
        lock on its directory), once what they hold is committed."""
        for found in self._handles.values():
            wait(found.growing)  # (a graph update decides once whether it writes copies and saves)
            found.lexical.close()
        self._writer.release()

    def _drop_deleted(self, store: Store) -> set[int]:
        """The ids of the indices the database holds. Lets go of the structures of the others (deleted by another
        process: their files take disk space while this process keeps them open); the first time this process
        writes, also removes the files of such indices that a writer killed while deleting them left behind."""
        sweep = self.writing and not self._swept
        listed = lexical_folders.owners(self.root) | ann.owners(self.root) if sweep else set()  # (before: files follow)
        live = {index_id for (index_id,) in store.db.execute("SELECT id FROM indices")}
        for index_id in [index_id for index_id in self._handles if index_id not in live]:
            self._drop(index_id)
        for index_id in listed - live:
            lexical_folders.remove_all(self.root, index_id)
            ann.remove_all(self.root, index_id)
        self._swept = self._swept or sweep
        return live

    def _drop(self, index_id: int) -> None:
        self._backfills.stop(index_id)
        found = self._handles.pop(index_id, None)
        if found is not None:
            wait(found.growing)  # what becomes of them no longer matters, only that they are done
            found.lexical.close()
        with self._filters_lock:
            for key in [key for key in self._filters if key[0] == index_id]:
                del self._filters[key]

    def _apply_vectors(self, store: Store, record: IndexRecord, path: str, graph: VectorIndex) -> None:
        writing = self.writing  # once: the lock may be taken while this runs, and then the next update copies
        problem = store.problem() if writing else None  # (a write committed just before a copy was restored)
        if problem is not None:  # the graph takes the rows in memory; their copies are written once it is back
            log.warning("index [%s]: the float32 copies of [%s] were not written: %s", record.name, path, problem)
            writing = False
        catch_up.apply_vectors(store, record, path, graph, writing=writing)
        if writing and graph.applied - graph.saved >= SAVE_EVERY and store.problem() is None:
            graph.save()
            self._trim(store, record.id)

    def _text_guard(self, folder: Path) -> None:
        """Called by a full-text index before it writes to its folder: refused once the database was replaced (by
        a copy restored while a catch-up runs, say), whose folders these changes, read from the other one, are not
        for."""
        self.refuse_unless_current(f"the full-text index {folder} was not written")

    def _trim(self, store: Store, index_id: int) -> None:
        """Drop the changes every persisted structure of the index already holds."""
        found = self._handles.get(index_id)
        if found is None:
            return
        held = min([found.lexical.applied, *(graph.saved for graph in found.vectors.values())])
        with store.write() as db:
            db.execute("DELETE FROM changes WHERE index_id = ? AND seq <= ?", (index_id, held))
            db.execute("INSERT OR REPLACE INTO change_floor (index_id, seq) VALUES (?, ?)", (index_id, held))

    def restriction(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """A cached filter result; ``key`` starts with the index id and includes its generation."""
        found = self._filters.get(key)
        if found is None:
            found = compute()
            with self._filters_lock:
                self._filters[key] = found
                while len(self._filters) > 16:
                    self._filters.popitem(last=False)
        return found

    def created(self, record: IndexRecord) -> None:
        """A new index: nothing of an earlier one with its id, and copies complete (the writer writes each one)."""
        self.forget(record.id)
        mark_new_copies(self.root, record)

    def forget(self, index_id: int) -> None:
        """Drop the structures of a deleted (or re-created) index, on disk too."""
        self._backfills.stop(index_id)
        with self._guard:
            self._drop(index_id)
            lexical_folders.remove_all(self.root, index_id)
            ann.remove_all(self.root, index_id)

    def close(self, store: Store) -> None:
        self._builds.close()
        self._backfills.stop()
        self._later.cancel()
        with self._guard:
            try:
                for index_id, found in self._handles.items():
                    try:
                        self._save(store, index_id, found)
                    except (OSError, RuntimeError, ValueError, sqlite3.Error) as exc:  # (a full disk, say)
                        log.warning(
                            "index [%s] in %s: its full-text index or graphs were not saved (%s); the next process "
                            "brings them up to date from the database",
                            found.name,
                            self.root,
                            exc,
                        )
            finally:
                self._handles.clear()
                self._workers.shutdown()
                self._writer.release()

    def _save(self, store: Store, index_id: int, found: Handles) -> None:
        problem = store.problem()  # removed, moved away or replaced by a copy: nothing of this process goes there
        found.lexical.close(keep=problem is None)
        found.settle()
        if self.writing and problem is not None:
            log.warning("index [%s]: its full-text changes and graphs were not saved: %s", found.name, problem)
        elif self.writing:
            for path, graph in found.vectors.items():
                if graph.applied != graph.saved:
                    if graph.copied < graph.applied:
                        with store.read():
                            catch_up.write_copies(store, index_id, path, graph)
                    graph.save()
            with contextlib.suppress(sqlite3.Error):  # the log stays; the next writer trims it
                self._trim(store, index_id)
