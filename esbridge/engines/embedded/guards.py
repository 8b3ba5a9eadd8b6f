"""The embedded engine's guards around each call: errors as the engine reports them, the database checked before a
read, the writer lock held for a write, and index and alias names resolved to the indices they stand for."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from esbridge import errors
from esbridge.engines.embedded.calls import Calls
from esbridge.engines.embedded.datadir import DataDir
from esbridge.engines.embedded.handles import IndexGone
from esbridge.engines.embedded.names import Names, write_index
from esbridge.engines.embedded.store import IndexRecord, Store


class Guards:
    """What ``EmbeddedEngine`` runs each call in; it sets these attributes."""

    _url: str
    _store: Store
    _shared: DataDir
    _names: Names
    _calls: Calls

    @contextmanager
    def _call(self, operation: str, index: str | None = None, *, reads: bool = True) -> Iterator[None]:
        with self._calls.call(operation, index):
            if reads:  # (once it is gone or replaced, connections opened before would answer from the removed file)
                self._shared.refuse_unless_current("cannot read")
            yield

    @contextmanager
    def _writing(self, operation: str, index: str | None = None) -> Iterator[sqlite3.Connection]:
        """A write transaction, in the process that holds the data directory's writer lock."""
        with self._call(operation, index, reads=False):
            self._shared.hold_writer(self._store)
            with self._store.write() as db:
                yield db

    def _refresh(self, record: IndexRecord) -> None:
        """Bring the index's full-text index and graphs up to the write just committed."""
        current = self._store.index(record.name)
        if current is not None:
            with contextlib.suppress(IndexGone):  # deleted since by another thread or process: nothing to bring up
                self._shared.ready(self._store, current, searching=False)

    def _missing(self, operation: str, name: str) -> errors.IndexNotFound:
        return errors.IndexNotFound(
            f"no such index [{name}]", url=self._url, operation=operation, index=name, status=404
        )

    def _failed(self, reason: str, operation: str, index: str) -> errors.EngineResponseError:
        return errors.EngineResponseError(reason, url=self._url, operation=operation, index=index)

    def _rejected(self, reason: str, operation: str, index: str | None) -> errors.RequestRejected:
        return errors.RequestRejected(reason, url=self._url, operation=operation, index=index, status=400)

    def _concrete(self, name: str, operation: str) -> list[IndexRecord]:
        """The indices ``name`` (an index or an alias) stands for; IndexNotFound when neither."""
        found = self._names.indices(name)
        if not found:
            raise self._missing(operation, name)
        return list(found)

    def _one(self, name: str, operation: str) -> IndexRecord:
        found = self._concrete(name, operation)
        if len(found) != 1:
            raise self._rejected(
                f"alias [{name}] points to {len(found)} indices; the embedded engine reads one at a time",
                operation,
                name,
            )
        return found[0]

    def _write_target(self, name: str, operation: str, *, documents: bool = True) -> IndexRecord:
        found = write_index(self._store, name, documents=documents)
        if found is None:
            raise self._missing(operation, name)
        return found
