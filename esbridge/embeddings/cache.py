"""A persistent store of vectors keyed by model identity and the exact text embedded.

One SQLite file (WAL mode) with one table::

    embedding(model TEXT, text_sha256 BLOB, vector BLOB, PRIMARY KEY (model, text_sha256))

``model`` is an ``Embedder.identity``, ``text_sha256`` the SHA-256 of the text's UTF-8 bytes, and
``vector`` little-endian float32 values. Every write is one transaction, so an interrupted run keeps
what it committed and a re-run embeds only the rest; a torn or foreign row (wrong length) is a miss.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from esbridge.errors import EmbeddingError
from esbridge.ids import shown_path

FILE_NAME = "embeddings.sqlite3"
_SCHEMA_VERSION = 1
_RECOVERY = "it holds only vectors the model makes again: delete it, and the next run starts an empty one"
assert array("f").itemsize == 4, "esbridge needs a platform whose C float is 32-bit"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/esbridge/embeddings``, by default ``~/.cache/esbridge/embeddings``."""
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "esbridge" / "embeddings"


def cache_path(directory: Path | None = None) -> Path:
    """The cache file in ``directory`` (by default ``default_cache_dir()``)."""
    return (directory.expanduser() if directory is not None else default_cache_dir()) / FILE_NAME


def model_of(identity: str) -> str:
    """``identity`` without the batch size an int8 ONNX embedder's identity names above one text a call: the
    same model and settings, whose vectors differ only by the texts batched together."""
    return _BATCHED.sub("", identity)


_BATCHED = re.compile(r"\+batch[0-9]+$")


def text_key(text: str) -> bytes:
    """The cache key of a text: SHA-256 of exactly what is embedded."""
    # surrogatepass: a JSON "\ud800" escape can put a lone surrogate in a str; it still needs a key.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def encode_vector(vector: Sequence[float]) -> bytes:
    values = array("f", vector)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def decode_vector(blob: bytes) -> list[float]:
    values = array("f")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


class EmbeddingCache:
    """Vectors by (model identity, text key), in ``directory/embeddings.sqlite3``.

    Safe to share between threads (one connection behind a lock) and between processes (SQLite
    locking; a writer waits up to ``timeout_s`` for another). Raises ``EmbeddingError`` when the file
    cannot be opened, read or written.
    """

    def __init__(self, directory: Path | None = None, *, timeout_s: float = 30.0) -> None:
        self.path = cache_path(directory)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; writes open their own below.
            self._db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise EmbeddingError(f"cannot open the embedding cache {shown_path(self.path)}: {exc}") from exc
        try:
            self._prepare()
        except (sqlite3.Error, EmbeddingError) as exc:
            self._db.close()
            if isinstance(exc, EmbeddingError):
                raise
            raise EmbeddingError(
                f"the embedding cache {shown_path(self.path)} is unusable: {exc}; {_RECOVERY}"
            ) from exc

    def _prepare(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > _SCHEMA_VERSION:
            raise EmbeddingError(
                f"the embedding cache {shown_path(self.path)} has schema version {version}, newer than this esbridge "
                f"understands ({_SCHEMA_VERSION}); upgrade esbridge or point embedding.cache_dir elsewhere"
            )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable except for the last commits on power loss
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embedding ("
            " model TEXT NOT NULL,"
            " text_sha256 BLOB NOT NULL,"
            " vector BLOB NOT NULL,"
            " PRIMARY KEY (model, text_sha256)"
            ")"  # not WITHOUT ROWID: rows of 1.5 kB and more are what rowid tables store compactly
        )
        if version < _SCHEMA_VERSION:
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def get_many(self, model: str, keys: Iterable[bytes], dimension: int) -> dict[bytes, list[float]]:
        """The cached vectors of ``keys`` for ``model``; absent keys (and rows of another length) are left out."""
        found: dict[bytes, list[float]] = {}
        size = dimension * 4
        with self._lock:
            try:
                for key in dict.fromkeys(keys):
                    row = self._db.execute(
                        "SELECT vector FROM embedding WHERE model = ? AND text_sha256 = ?", (model, key)
                    ).fetchone()
                    if row is not None and len(row[0]) == size:
                        found[key] = decode_vector(row[0])
            except sqlite3.Error as exc:
                raise EmbeddingError(
                    f"cannot read the embedding cache {shown_path(self.path)}: {exc}; {_RECOVERY}", model=model
                ) from exc
        return found

    def put_many(self, model: str, items: Iterable[tuple[bytes, Sequence[float]]]) -> None:
        """Store ``(key, vector)`` pairs for ``model`` in one transaction, replacing what was there."""
        rows = [(model, key, encode_vector(vector)) for key, vector in items]
        if not rows:
            return
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embedding (model, text_sha256, vector) VALUES (?, ?, ?)", rows
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise EmbeddingError(
                    f"cannot write the embedding cache {shown_path(self.path)}: {exc}", model=model
                ) from exc

    def count(self, model: str | None = None) -> int:
        """How many vectors are stored, for one model or for all."""
        with self._lock:
            if model is None:
                row = self._db.execute("SELECT count(*) FROM embedding").fetchone()
            else:
                row = self._db.execute("SELECT count(*) FROM embedding WHERE model = ?", (model,)).fetchone()
        return int(row[0])

    def models(self) -> dict[str, int]:
        """How many vectors each model identity has stored, most first."""
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT model, count(*) FROM embedding GROUP BY model ORDER BY count(*) DESC, model"
                ).fetchall()
            except sqlite3.Error as exc:
                raise EmbeddingError(f"cannot read the embedding cache {shown_path(self.path)}: {exc}") from exc
        return {str(model): int(count) for model, count in rows}

    def drop(self, models: Iterable[str]) -> int:
        """Delete every vector of ``models`` and give the space back to the file system; how many went."""
        names = sorted(set(models))
        if not names:
            return 0
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    deleted = sum(
                        self._db.execute("DELETE FROM embedding WHERE model = ?", (name,)).rowcount for name in names
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                # Deleted pages stay in the file until it is rewritten; a prune is meant to free disk.
                self._db.execute("VACUUM")
            except sqlite3.Error as exc:
                raise EmbeddingError(f"cannot prune the embedding cache {shown_path(self.path)}: {exc}") from exc
        return deleted

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
