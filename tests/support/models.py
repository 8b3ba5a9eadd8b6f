"""The ONNX models that scripts/fetch_models.py puts in esbridge's model folder (bootstrap runs it)."""

from __future__ import annotations

import os

import pytest

from esbridge.config.embedding import Precision
from esbridge.embeddings.model_store import ONNX_FILES, store_folder


def stored(model: str, precision: Precision) -> bool:
    folder = store_folder(model)
    return any((folder / name).is_file() for name in ONNX_FILES[precision])


def require_stored(model: str, precision: Precision = "int8") -> None:
    """Skip when ``model`` is not in the model folder; under CI (which fetches them), fail instead."""
    if stored(model, precision):
        return
    folder = store_folder(model).parent
    message = f"{model} ({precision}) is not in {folder}: run .venv/bin/python scripts/fetch_models.py"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
