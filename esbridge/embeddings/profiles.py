"""What a model needs besides its weights: pooling, normalization, prompts and how many tokens it reads.

These belong to the model, not to the code that calls it: e5 was trained with ``"query: "`` and
``"passage: "`` in front of every text (Wang et al. 2022, "Text Embeddings by Weakly-Supervised
Contrastive Pre-training", section 4.1), bge-*-v1.5 with an instruction in front of short queries and
nothing in front of passages (its model card), and all-MiniLM-L6-v2 with neither. Embedding without
them costs quality silently, so every known model has a profile; settings can override each field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Pooling = Literal["mean", "cls"]


@dataclass(frozen=True)
class ModelProfile:
    """How texts become vectors with one model.

    ``pooling`` turns token states into one vector (``mean`` over real tokens, or the ``cls`` token's);
    ``query_prompt`` and ``passage_prompt`` are put in front of queries and of indexed texts.
    Pooling applies to ONNX exports (token states out); a sentence-transformers folder pools itself.
    """

    pooling: Pooling = "mean"
    normalize: bool = True
    query_prompt: str = ""
    passage_prompt: str = ""
    max_tokens: int | None = None
    """None: what the model's own files say (sentence-transformers' ``max_seq_length``; 512 for an ONNX export)."""

    def query(self, text: str) -> str:
        return self.query_prompt + text

    def passage(self, text: str) -> str:
        return self.passage_prompt + text

    def describe(self) -> str:
        """The fields that change the vectors, for identities and index metadata."""
        return (
            f"{self.pooling}{'+norm' if self.normalize else ''};q={self.query_prompt!r};p={self.passage_prompt!r};"
            f"max={self.max_tokens}"
        )


PLAIN = ModelProfile()
"""A model with no prompts; what a model this module does not know gets, before settings."""

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
BGE_SMALL = "BAAI/bge-small-en-v1.5"
E5_SMALL = "intfloat/e5-small-v2"
MS_MARCO_RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

KNOWN_PROFILES: dict[str, ModelProfile] = {
    MINILM: ModelProfile(pooling="mean", max_tokens=256),
    BGE_SMALL: ModelProfile(pooling="cls", query_prompt=BGE_QUERY_INSTRUCTION, max_tokens=512),
    E5_SMALL: ModelProfile(pooling="mean", query_prompt="query: ", passage_prompt="passage: ", max_tokens=512),
    MS_MARCO_RERANKER: ModelProfile(pooling="cls", normalize=False, max_tokens=512),
}

_ALIASES = {
    "all-minilm-l6-v2": MINILM,
    "minilm": MINILM,
    "bge-small-en-v1.5": BGE_SMALL,
    "bge-small": BGE_SMALL,
    "e5-small-v2": E5_SMALL,
    "e5-small": E5_SMALL,
    "ms-marco-minilm-l-12-v2": MS_MARCO_RERANKER,
}


def canonical_name(model: str) -> str | None:
    """The hub id of a known model named by its id or a short alias (any case); None when unknown."""
    folded = model.casefold()
    for name in KNOWN_PROFILES:
        if name.casefold() == folded:
            return name
    return _ALIASES.get(folded)


def folder_model(model: str) -> str | None:
    """The known model a local folder holds, by the folder's name: the model's own (``bge-small-en-v1.5``, as
    ``huggingface-cli download --local-dir`` names it), esbridge's model folder's ``BAAI--bge-small-en-v1.5``, or
    a hub cache's ``models--BAAI--bge-small-en-v1.5/snapshots/<commit>``. None for anything else."""
    path = Path(model).expanduser()
    if not path.is_dir():
        return None
    for part in reversed(path.resolve().parts[-3:]):
        named = part.removeprefix("models--").replace("--", "/")
        known = canonical_name(named) or canonical_name(named.rpartition("/")[2])
        if known is not None:
            return known
    return None


def folder_pooling(model: str) -> Pooling | None:
    """The pooling a local sentence-transformers folder declares (``1_Pooling/config.json``: the [CLS] token's
    state, or the mean of the tokens'), which its ONNX export beside it needs too; None where it declares
    neither, or ``model`` is not a folder."""
    config = Path(model).expanduser() / "1_Pooling" / "config.json"
    try:
        declared = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(declared, dict):
        return None
    if declared.get("pooling_mode_cls_token") is True:
        return "cls"
    if declared.get("pooling_mode_mean_tokens") is True:
        return "mean"
    return None


def profile_for(
    model: str,
    *,
    pooling: Pooling | None = None,
    normalize: bool | None = None,
    query_prompt: str | None = None,
    passage_prompt: str | None = None,
    max_tokens: int | None = None,
) -> ModelProfile:
    """The known profile of ``model`` (by name, or a local folder's name; ``PLAIN`` when unknown), pooled as a
    local folder declares, with each given field replacing its own."""
    known = canonical_name(model) or folder_model(model)
    base = KNOWN_PROFILES[known] if known is not None else PLAIN
    declared = folder_pooling(model)
    return ModelProfile(
        pooling=(declared or base.pooling) if pooling is None else pooling,
        normalize=base.normalize if normalize is None else normalize,
        query_prompt=base.query_prompt if query_prompt is None else query_prompt,
        passage_prompt=base.passage_prompt if passage_prompt is None else passage_prompt,
        max_tokens=base.max_tokens if max_tokens is None else max_tokens,
    )
