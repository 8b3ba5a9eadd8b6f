"""Index and alias names resolved to index records, remembered between searches until the database changes."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from esbridge.engines.embedded.filters import Unsupported
from esbridge.engines.embedded.store import IndexRecord, Store

_INVALID_NAME = re.compile(r'[\\/*?"<>| ,#:A-Z]')

_KEPT = 256
"""Names remembered per thread; more are forgotten all at once (a search names one or two)."""


class NoWriteIndex(Unsupported):
    """Writes to an alias without a write index, which a cluster refuses (each item of a bulk request)."""

    def __init__(self, alias: str) -> None:
        super().__init__(
            f"no write index is defined for alias [{alias}]. The write index may be explicitly disabled using "
            "is_write_index=false or the alias points to multiple indices without one being designated as a write index"
        )


def write_index(store: Store, name: str, *, documents: bool = True) -> IndexRecord | None:
    """The index writes to ``name`` go to: that index, or the alias's index flagged ``is_write_index``, else its only
    index (with ``documents``, as a cluster writes documents, only if that one is not flagged false: a mapping
    change is not refused so); None when ``name`` is neither. NoWriteIndex when the alias has no write index."""
    record = store.index(name)
    if record is not None:
        return record
    targets = store.alias_targets(name)
    if not targets:
        return None
    lone = len(targets) == 1 and not (documents and targets[0][1] is False)
    chosen = [target for target, flag in targets if flag] or ([targets[0][0]] if lone else [])
    if not chosen:
        raise NoWriteIndex(name)
    return store.index(chosen[0])


class Names:
    """The indices a name stands for. Outside a transaction the answer is remembered per thread (SQLite's
    ``data_version`` is per connection) and asked again once ``Store.version`` moves: any commit, by this
    process or another, so an alias moved anywhere is followed by the next search."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._local = threading.local()

    def indices(self, name: str) -> tuple[IndexRecord, ...]:
        """The index ``name``, or the indices of the alias ``name``; empty when it is neither."""
        if self._store.db.in_transaction:  # (a write sees its own uncommitted changes, which move no version)
            return self._read(name)
        version = self._store.version()
        remembered: tuple[tuple[int, int], dict[str, tuple[IndexRecord, ...]]] | None = getattr(
            self._local, "remembered", None
        )
        if remembered is None or remembered[0] != version or len(remembered[1]) >= _KEPT:
            remembered = self._local.remembered = (version, {})
        found = remembered[1].get(name)
        if found is None:
            found = remembered[1][name] = self._read(name)
        return found

    def seen(self) -> tuple[int, int] | None:
        """The database version this thread's last lookup outside a transaction was current at."""
        remembered: tuple[tuple[int, int], Any] | None = getattr(self._local, "remembered", None)
        return None if remembered is None else remembered[0]

    def _read(self, name: str) -> tuple[IndexRecord, ...]:
        record = self._store.index(name)
        if record is not None:
            return (record,)
        targets = [self._store.index(target) for target, _ in self._store.alias_targets(name)]
        return tuple(target for target in targets if target is not None)


def check_new_index(index: str, body: Mapping[str, Any]) -> None:
    """Refuse what OpenSearch refuses in an index's name, and create-index keys the embedded engine lacks."""
    if not index or _INVALID_NAME.search(index) or index[0] in "-_+" or index in (".", ".."):
        raise Unsupported(f"invalid index name [{index}]")
    unknown = sorted(set(body) - {"settings", "mappings", "aliases"})
    if unknown or body.get("aliases"):
        raise Unsupported(f"unsupported create-index keys {unknown or ['aliases']}")


def alias_action(action: Mapping[str, Any]) -> tuple[str, str, str, bool | None]:
    """An ``update_aliases`` action as (``add`` or ``remove``, index, alias, ``is_write_index``)."""
    kind, spec = next(iter(action.items())) if len(action) == 1 else ("", {})
    if kind not in ("add", "remove") or not isinstance(spec, Mapping):
        raise Unsupported(f"unsupported alias action {dict(action)!r}")
    index, alias = spec.get("index"), spec.get("alias")
    if not isinstance(index, str) or not isinstance(alias, str) or "*" in index + alias:
        raise Unsupported(f"alias action needs one 'index' and one 'alias', got {dict(spec)!r}")
    flag = spec.get("is_write_index")
    return kind, index, alias, None if flag is None else bool(flag)
