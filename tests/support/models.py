"""The ONNX models that scripts/fetch_models.py puts in esbridge's model folder (bootstrap runs it)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

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


def save_tiny_cross_encoder(folder: Path, words: Sequence[str]) -> Path:
    """A 1-layer BERT sequence classifier with one output over ``words``, saved in ``folder`` (no download)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]), encoding="utf-8")
    transformers.BertTokenizer(str(vocab)).save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(words) + 5,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder
