"""SHA-256 of a model's weight files, computed once per file and remembered by path, size and mtime.

The identity an index records must tell two models apart by their weights, not by their names; hashing
a 100 MB file takes about half a second, which a search must not pay every time a process starts. So
each file's digest is kept in a small JSON file (``weight-hashes.json`` in esbridge's cache folder) under
its absolute path, size and modification time: a file that is rewritten gets a new mtime and is hashed
again; one that is copied or reinstalled keeps its digest (the content is the same).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from esbridge.config.embedding import HASH_CACHE_ENV as HASH_CACHE_ENV  # re-exported

log = logging.getLogger("esbridge.embeddings")

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt", ".pth")
_SKIPPED_FOLDERS = {"onnx", "openvino"}  # other backends' exports in a sentence-transformers folder
_CHUNK = 1 << 20
_lock = threading.Lock()
_memory: dict[str, str] = {}


def hash_cache_file() -> Path:
    configured = os.environ.get(HASH_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "esbridge" / "weight-hashes.json"


def torch_weight_files(folder: Path) -> list[Path]:
    """The weight files a sentence-transformers folder loads: ``*.safetensors`` (or ``*.bin`` where a module has
    no safetensors) in the folder and its module subfolders, not the ONNX or OpenVINO exports beside them."""
    found: list[Path] = []
    for directory in sorted({folder, *(path.parent for path in folder.rglob("*") if path.is_file())}):
        relative = directory.relative_to(folder)
        if any(part in _SKIPPED_FOLDERS or part.startswith(".") for part in relative.parts):
            continue
        files = sorted(path for path in directory.iterdir() if path.is_file() and path.suffix in WEIGHT_SUFFIXES)
        safetensors = [path for path in files if path.suffix == ".safetensors"]
        found.extend(safetensors or [path for path in files if path.suffix != ".onnx"])
    return found


def weights_digest(files: Sequence[Path], root: Path | None = None) -> str:
    """One SHA-256 over the files' names (relative to ``root``, else bare) and their contents' digests."""
    digest = hashlib.sha256()
    for file in files:
        name = file.relative_to(root).as_posix() if root is not None else file.name
        digest.update(f"{name}\0{file_digest(file)}\n".encode())
    return digest.hexdigest()


def file_digest(file: Path, cache_file: Path | None = None) -> str:
    """The SHA-256 of ``file``'s content, from the cache when its path, size and mtime are unchanged."""
    resolved = file.resolve()
    stat = resolved.stat()
    key = f"{resolved}\0{stat.st_size}\0{stat.st_mtime_ns}"
    with _lock:
        if key in _memory:
            return _memory[key]
    cache_file = cache_file or hash_cache_file()
    stored = _read(cache_file)
    digest = stored.get(key)
    if digest is None:
        digest = _sha256(resolved)
        stored = {**_read(cache_file), key: digest}
        _write(cache_file, stored)
    with _lock:
        _memory[key] = digest
    return digest


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _read(cache_file: Path) -> dict[str, str]:
    try:
        loaded = json.loads(cache_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # a damaged cache costs a re-hash, nothing else
        log.warning("weight hash cache %s unreadable (%s); hashing again", cache_file, exc)
        return {}
    return {str(key): str(value) for key, value in loaded.items()} if isinstance(loaded, dict) else {}


def _write(cache_file: Path, stored: dict[str, str]) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(stored, indent=0, sort_keys=True), encoding="utf-8")
        partial.replace(cache_file)
    except OSError as exc:  # read-only home: the digest is still right, only hashed again next time
        log.warning("weight hash cache %s not written (%s); the next process hashes again", cache_file, exc)
