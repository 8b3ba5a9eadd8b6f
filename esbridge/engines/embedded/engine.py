"""The embedded engine: esbridge on a laptop, no cluster. Speaks the OpenSearch dialect (the subset
esbridge sends, see ``query``) over a data directory: one SQLite database (the documents, the truth),
tantivy indices for full text and usearch graphs for vectors beside it (see ``datadir``)."""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from esbridge import errors
from esbridge.config.settings import Settings
from esbridge.engines import paging, responses
from esbridge.engines.base import BulkAction, BulkItemFailure, BulkResult, Dialect, IndexInfo, SearchResult
from esbridge.engines.blocks import BLOCKED_STATUS, cluster_block_reason
from esbridge.engines.capabilities import Capabilities
from esbridge.engines.embedded.calls import CLOSE_WAIT_S, Calls
from esbridge.engines.embedded.capabilities import describe
from esbridge.engines.embedded.database_file import Problem
from esbridge.engines.embedded.field_checks import check_update
from esbridge.engines.embedded.guards import Guards
from esbridge.engines.embedded.handles import IndexGone
from esbridge.engines.embedded.location import given_path
from esbridge.engines.embedded.mapping import DocumentError, Schema, created_schema, updated_schema
from esbridge.engines.embedded.names import Names, NoWriteIndex, alias_action, check_new_index
from esbridge.engines.embedded.query import Searcher, Unsupported
from esbridge.engines.embedded.refusals import all_refused, refused_document, refused_id
from esbridge.engines.embedded.settings import index_settings, merge
from esbridge.engines.embedded.shared_dirs import close_shared, open_shared
from esbridge.engines.embedded.store import IndexRecord, Store

log = logging.getLogger(__name__)


def default_searches_at_once() -> int:
    """Searches one engine object runs at once by default: Elasticsearch's search thread pool size for the cores
    this process may use (one and a half per core, plus one). More threads searching at once answered fewer
    searches a second, not more (embedded.md, "Concurrency")."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return cores * 3 // 2 + 1


class EmbeddedEngine(Guards, paging.ScanBySearch):
    """An ``Engine`` over a data directory; reports the ``opensearch`` dialect. Searches run concurrently
    (each thread reads through its own connection); one process at a time writes (``WriterBusy``).

    ``searches_at_once``: how many searches run at once (default ``default_searches_at_once()``); the others
    wait for one of them to end, as a cluster's search queue holds a request until a search thread is free."""

    def __init__(self, data_dir: Path | str | bytes, *, searches_at_once: int | None = None) -> None:
        at_once = default_searches_at_once() if searches_at_once is None else searches_at_once
        if not isinstance(at_once, int) or isinstance(at_once, bool) or at_once < 1:
            raise ValueError(f"searches_at_once must be a whole number of at least 1, not {searches_at_once!r}")
        self._searching = threading.BoundedSemaphore(at_once)
        self._dir = given_path(data_dir).expanduser()
        self._url = f"{errors.EMBEDDED_URL_PREFIX}{self._dir}"
        try:
            self._store = Store(self._dir)
        except (OSError, sqlite3.Error) as exc:
            raise errors.EngineUnavailable(f"cannot open the database: {exc}", url=self._url, operation="open") from exc
        self._shared = open_shared(self._store)
        self._names = Names(self._store)
        self._calls = Calls(self._url)
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedEngine:
        return cls(settings.data_dir)

    @property
    def dialect(self) -> Dialect:
        return "opensearch"

    @property
    def url(self) -> str:
        return self._url

    @property
    def data_dir(self) -> Path:
        return self._dir

    def database_problem(self) -> Problem | None:
        """Why this engine can no longer use its database (removed, moved away or replaced), or None."""
        return self._store.problem()

    # Engine protocol

    def probe(self) -> Capabilities:
        return describe(self._url)

    def index_exists(self, index: str) -> bool:
        with self._call("check index", index), self._store.read():
            return self._store.index(index) is not None or bool(self._store.alias_targets(index))

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        operation = "create index"
        with self._call(operation, index, reads=False):
            check_new_index(index, body)
        settings = index_settings(body.get("settings") or {})
        mappings = copy.deepcopy(dict(body.get("mappings") or {}))
        with self._writing(operation, index):
            if self._store.index(index) is not None:
                raise errors.IndexAlreadyExists(
                    f"index [{index}] already exists", url=self._url, operation=operation, index=index, status=400
                )
            if self._store.alias_targets(index):
                raise self._rejected(f"an alias named [{index}] exists", operation, index)
            schema = created_schema(mappings, settings["index"])
            self._store.create_index(index, settings, mappings, schema)
            created = self._store.index(index)
        assert created is not None
        # (drops what a database without id reuse protection may have left)
        self._calls.after_commit(operation, index, lambda: self._shared.created(created))

    def delete_index(self, index: str, *, missing_ok: bool = False) -> bool:
        operation = "delete index"
        with self._writing(operation, index):
            record = self._store.index(index)
            if record is None:
                if self._store.alias_targets(index):
                    raise self._rejected(
                        f"[{index}] is an alias; delete its concrete indices instead", operation, index
                    )
                if missing_ok:
                    return False
                raise self._missing(operation, index)
            self._store.delete_index(record)
        self._calls.after_commit(operation, index, lambda: self._shared.forget(record.id))
        return True

    def refresh(self, index: str) -> None:
        with self._call("refresh", index), self._store.read():
            self._concrete(index, "refresh")  # writes are visible at commit; only the name is checked

    def list_indices(self, pattern: str) -> list[IndexInfo]:
        operation = "list indices"
        with self._call(operation, pattern), self._store.read():
            names: set[str] = set()
            all_names = self._store.index_names()
            for part in pattern.split(","):
                if "*" in part or "?" in part:
                    names.update(name for name in all_names if fnmatch.fnmatchcase(name, part))
                else:
                    names.update(record.name for record in self._concrete(part, operation))
            infos = []
            for name in sorted(names):
                record = self._store.index(name)
                assert record is not None
                infos.append(
                    IndexInfo(name, self._store.count(record.id), self._store.size_bytes(record.id), health="green")
                )
            return infos

    def alias_targets(self, alias: str) -> list[str]:
        with self._call("read alias", alias), self._store.read():
            return [name for name, _ in self._store.alias_targets(alias)]

    def update_aliases(self, actions: Sequence[Mapping[str, Any]]) -> None:
        operation = "update aliases"
        with self._writing(operation):
            for action in actions:
                kind, index, alias, flag = alias_action(action)
                record = self._store.index(index)
                if record is None:
                    raise self._missing(operation, index)
                if kind == "remove":
                    if not self._store.remove_alias(alias, record.id):
                        raise self._missing(operation, alias)
                    continue
                if self._store.index(alias) is not None:
                    raise self._rejected(
                        f"an index named [{alias}] exists; an alias cannot take its name", operation, alias
                    )
                self._store.put_alias(alias, record.id, flag)

    def get_mapping(self, index: str) -> dict[str, Any]:
        with self._call("read mapping", index), self._store.read():
            return copy.deepcopy(self._one(index, "read mapping").mappings)

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        return {name: self.get_mapping(name) for name in self.alias_targets(index) or [index]}

    def get_index_settings(self, index: str) -> dict[str, Any]:
        with self._call("read settings", index), self._store.read():
            settings = copy.deepcopy(self._one(index, "read settings").settings["index"])
        return dict(settings)

    def put_mapping(self, index: str, properties: Mapping[str, Any]) -> None:
        operation = "update mapping"
        with self._writing(operation, index):
            record = self._write_target(index, operation, documents=False)
            mappings = copy.deepcopy(record.mappings)  # (the record's own stay as they are if this is refused)
            live = mappings.setdefault("properties", {})
            for name, wanted in properties.items():
                current = live.get(name)
                if current is not None and current.get("type", "object") != wanted.get("type", "object"):
                    raise self._rejected(
                        f"mapper [{name}] cannot change type [{current.get('type')}] to [{wanted.get('type')}]",
                        operation,
                        index,
                    )
                if current is not None:
                    check_update(name, current, wanted)
                live[name] = merge(copy.deepcopy(current or {}), wanted)
            updated_schema(mappings, record.settings["index"], properties)
            self._store.replace_mappings(record, mappings)
        self._calls.after_commit(operation, index, lambda: self._refresh(record))

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        with self._writing("update mapping _meta", index):
            self._store.replace_meta(
                self._write_target(index, "update mapping _meta", documents=False), copy.deepcopy(dict(meta))
            )

    def set_write_block(self, index: str, blocked: bool) -> None:
        operation = "block writes" if blocked else "allow writes"
        with self._writing(operation, index):
            for record in self._concrete(index, operation):
                patch = {"index": {"blocks": {"write": "true" if blocked else "false"}}}
                self._store.replace_settings(record, merge(copy.deepcopy(record.settings), patch))

    def count(self, index: str) -> int:
        with self._call("count", index), self._store.read():
            return sum(self._store.count(record.id) for record in self._concrete(index, "count"))

    def reindex(self, source: str, dest: str, *, timeout_s: float | None = None) -> int:
        operation = "reindex"
        with self._writing(operation, dest):
            origin = self._one(source, operation)
            if not self._names.indices(dest):
                raise paging.missing_dest(self._url, dest)
            target = self._write_target(dest, operation)
            schema = target.schema
            rows = [row for (row,) in self._store.db.execute("SELECT row FROM docs WHERE index_id = ?", (origin.id,))]
            if rows and target.write_blocked:
                blocked = cluster_block_reason(target.name)
                raise self._failed(f"{len(rows)} document(s) failed to copy, first: {blocked}", operation, dest)
            for row in rows:
                doc_id = self._store.db.execute("SELECT id FROM docs WHERE row = ?", (row,)).fetchone()[0]
                document = self._store.full_source(row)
                try:
                    schema.check(document)
                except DocumentError as exc:
                    failure = f"document {doc_id!r} failed to copy: {exc.kind}: {exc}"
                    raise self._failed(failure, operation, dest) from exc
                self._store.put_document(target, schema, doc_id, document)
            self._store.bump(target.id)
        self._calls.after_commit(operation, dest, lambda: self._refresh(target))
        return len(rows)

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        """Apply ``actions`` in one transaction; a refused document is reported, an unexpected error undoes all."""
        operation = "bulk write"
        if not actions:
            return BulkResult(succeeded=[], failed=[])
        succeeded: list[str] = []
        failed: list[BulkItemFailure] = []
        with contextlib.ExitStack() as under_way:  # (until the write returns: see ``under_way``)
            with self._writing(operation, index):
                try:
                    record = self._write_target(index, operation)
                except NoWriteIndex as exc:  # (refused item by item, as a cluster refuses them)
                    return all_refused(actions, 400, f"illegal_argument_exception: {exc}")
                under_way.enter_context(self._shared.writing_to(record))
                if record.write_blocked:
                    return all_refused(actions, BLOCKED_STATUS, cluster_block_reason(record.name))
                schema = record.schema
                batch: dict[str, Mapping[str, Any]] = {}  # whole documents, stored together
                for action in actions:
                    refused = refused_id(action.id)
                    if refused is not None:
                        failed.append(refused)
                        continue
                    if action.op != "index" or action.document is None or action.id in batch:
                        self._store.put_documents(record, schema, list(batch.items()))
                        batch.clear()
                        problem = self._apply(record, schema, action)
                    else:
                        problem = refused_document(schema, action.id, action.document)
                        if problem is None:
                            batch[action.id] = action.document
                    if problem is None:
                        succeeded.append(action.id)
                    else:
                        failed.append(problem)
                self._store.put_documents(record, schema, list(batch.items()))
                self._store.bump(record.id)
            self._calls.after_commit(operation, index, lambda: self._refresh(record))
        return BulkResult(succeeded=succeeded, failed=failed)

    def _apply(self, record: IndexRecord, schema: Schema, action: BulkAction) -> BulkItemFailure | None:
        if action.op == "delete":
            self._store.delete_document(record, action.id)  # deleting what is gone is the end state asked for
            return None
        if action.document is None:
            return BulkItemFailure(
                action.id, 400, f"action_request_validation_exception: {action.op} without a document"
            )
        document = dict(action.document)
        problem = refused_document(
            schema, action.id, document
        )  # (a patch alone first: one nested too deep cannot merge)
        if action.op == "update" and problem is None:
            row = self._store.document_row(record.id, action.id)
            if row is None:
                return BulkItemFailure(action.id, 404, f"document_missing_exception: [{action.id}]: document missing")
            problem = refused_document(schema, action.id, document := merge(self._store.full_source(row), document))
        if problem is None:
            self._store.put_document(record, schema, action.id, document)
        return problem

    def search(self, index: str, body: Mapping[str, Any], *, patience_s: float | None = None) -> SearchResult:
        """``patience_s``: how long to wait for an index being built whole (``builds``; None: to the end)."""
        # No read transaction: a row the indices return was committed before them, so a fresh read finds it.
        with self._call("search", index):
            if not isinstance(index, str) or "," in index or "*" in index:
                raise Unsupported(f"the embedded engine searches one index or alias, not [{index}]")
            answer = self._answer(index, body, patience_s, last=False) or self._answer(
                index, body, patience_s, last=True
            )
            assert answer is not None  # (the last attempt answers or raises)
        return responses.search_result(answer, url=self._url, index=index)

    def _answer(
        self, index: str, body: Mapping[str, Any], patience_s: float | None, *, last: bool
    ) -> dict[str, Any] | None:
        """The answer of the index ``index`` stands for; None (unless ``last``) when that index was deleted after
        the lookup, so that the name is looked up again, as an alias moved before the deletion leads elsewhere."""
        record = self._one(index, "search")
        seen = self._names.seen()
        try:
            handles = self._shared.ready(self._store, record, patience_s=patience_s)
        except IndexGone:
            if last:
                raise self._missing("search", index) from None
            return None
        with self._searching:  # (taken after waiting for a build: a search waiting for one holds no turn)
            answer = Searcher(self._store, record, handles, self._shared).run(body)
        if last or self._store.version() == seen:
            return answer
        current = self._store.index(record.name)
        return answer if current is not None and current.id == record.id else None

    def msearch(
        self, index: str, bodies: Sequence[Mapping[str, Any]], *, patience_s: float | None = None
    ) -> list[SearchResult | Exception]:
        results: list[SearchResult | Exception] = []
        for body in bodies:
            try:
                results.append(self.search(index, body, patience_s=patience_s))
            except errors.EngineError as exc:
                results.append(exc)
        return results

    def close(self) -> None:
        """Wait for the calls other threads have under way, then save and close; once only."""
        if self._closed:
            return
        self._closed = True
        running = self._calls.close()
        if running:  # closing under them would crash the process; what they commit is in the database anyway
            log.warning("%s: %d call(s) still running after %.0f s; left open", self._url, running, CLOSE_WAIT_S)
            return
        close_shared(self._shared, self._store)
        self._store.close()
