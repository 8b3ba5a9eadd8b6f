"""Cross-encoder re-ranking with a tiny model this test builds (no model can be downloaded here)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from esbridge.config.pipeline import RerankSettings
from esbridge.errors import EmbeddingError, ModelUnavailable
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.rerank import RERANKERS, CrossEncoderReranker, rerank
from tests.support.memory_engine import LEX, SEM, MemoryEngine, StubEmbedder, doc, searcher
from tests.support.models import save_tiny_cross_encoder

WORDS = ["solar", "wind", "energy", "bread", "panel", "turbine", "grid", "a", "b", "c", "d"]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer BERT sequence classifier with one output, saved as a local model folder."""
    return save_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"), WORDS)


def test_the_cross_encoder_loads_from_a_folder_and_scores_pairs(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=64)
    scores = reranker.score("solar energy", ["solar panel", "bread", "wind turbine"])
    assert len(scores) == 3
    assert len(set(scores)) == 3, "a trained-or-not model still tells different texts apart"
    assert reranker.score("solar", []) == []


def test_a_scoring_failure_is_an_esbridge_error_naming_the_re_ranker(tiny_cross_encoder: Path) -> None:
    """Texts longer than the model's positions (64 here) make torch fail; the error names the re-ranker."""
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=512)
    with pytest.raises(EmbeddingError, match=rf"^re-ranker '{tiny_cross_encoder}': re-ranking 1 text\(s\) failed"):
        reranker.score("solar", [" ".join(["solar"] * 200)])


def test_a_missing_model_is_model_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match=r"^re-ranker '.*nothing-here': model folder .* does not exist"):
        CrossEncoderReranker(str(tmp_path / "nothing-here"))


def test_a_folder_under_the_home_directory_loads_as_written(
    tiny_cross_encoder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "~/models/ce" was recognised as a folder, but handed to sentence-transformers unexpanded, as a hub id.
    monkeypatch.setenv("HOME", str(tiny_cross_encoder.parent))
    reranker = CrossEncoderReranker(f"~/{tiny_cross_encoder.name}", max_length=64)
    assert len(reranker.score("solar", ["solar panel", "bread"])) == 2


@pytest.mark.parametrize("name", ["/nonexistent/ce", "./ce", "~/nonexistent-ce"])
def test_a_path_that_is_no_folder_is_named_as_a_missing_folder(
    name: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # It was asked of the hub, which answered with a repository-name rule and logged a line of its own.
    with pytest.raises(ModelUnavailable, match=r"^re-ranker '.*': model folder .* does not exist$"):
        CrossEncoderReranker(name)
    captured = capsys.readouterr()
    assert "Repo id" not in captured.err + captured.out + caplog.text


def test_an_encoder_without_a_classification_head_is_refused(tmp_path: Path) -> None:
    """sentence-transformers gives such a model (an embedding model's folder, a plain BERT) a freshly
    initialised head: it re-ranked every search by random scores, with no word from esbridge."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]), encoding="utf-8")
    transformers.BertTokenizer(str(vocab)).save_pretrained(tmp_path)
    config = transformers.BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(tmp_path)
    with pytest.raises(ModelUnavailable, match=r"BertModel.*no cross-encoder"):
        RERANKERS.get_named("cross-encoder")(RerankSettings(enabled=True, model=str(tmp_path)))


def test_a_sentence_transformers_embedding_folder_is_refused_with_esbridge_s_error_alone(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # transformers printed its load report of the head it made up ("MISSING ... newly initialized") first.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    models = pytest.importorskip("sentence_transformers.models")
    st = pytest.importorskip("sentence_transformers")
    encoder = tmp_path / "encoder"
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]), encoding="utf-8")
    transformers.BertTokenizer(str(vocab)).save_pretrained(encoder)
    config = transformers.BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(encoder)
    embedding = tmp_path / "embedding-model"
    st.SentenceTransformer(modules=[models.Transformer(str(encoder)), models.Pooling(16)]).save(str(embedding))
    assert (embedding / "modules.json").is_file()
    capfd.readouterr()
    caplog.clear()
    verbosity = transformers.logging.get_verbosity()

    with pytest.raises(ModelUnavailable, match=r"BertModel.*no cross-encoder.*belongs in \[embedding\] model"):
        RERANKERS.get_named("cross-encoder")(RerankSettings(enabled=True, model=str(embedding)))
    captured = capfd.readouterr()
    assert (captured.out, captured.err, caplog.text) == ("", "", "")
    assert transformers.logging.get_verbosity() == verbosity


def test_a_causal_language_model_scored_by_its_yes_and_no_tokens_is_accepted(tmp_path: Path) -> None:
    """sentence-transformers scores a ...ForCausalLM re-ranker (Qwen3-Reranker's kind) by its "yes" and "no" tokens."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "yes", "no"]), encoding="utf-8")
    transformers.BertTokenizer(str(vocab)).save_pretrained(tmp_path)
    config = transformers.LlamaConfig(
        vocab_size=len(WORDS) + 7,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    reranker = CrossEncoderReranker(str(tmp_path), max_length=64)
    assert len(reranker.score("solar", ["solar panel", "bread"])) == 2


def test_the_cross_encoder_is_registered_as_a_plugin(tiny_cross_encoder: Path) -> None:
    factory = RERANKERS.get_named("cross-encoder")
    reranker = factory(RerankSettings(enabled=True, model=str(tiny_cross_encoder)))
    assert reranker.name == str(tiny_cross_encoder)


def test_rerank_orders_the_head_by_the_model_and_keeps_it_above_the_tail() -> None:
    class ByLength:
        name = "length"

        def score(self, query: str, texts: Sequence[str]) -> list[float]:
            return [float(len(text)) for text in texts]

    scores = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.1}
    texts = {"a": "x", "b": "xxx", "c": "xx", "d": "xxxxxxxx"}
    result = rerank(scores, texts, "q", ByLength(), top=3)
    assert sorted(result.scores, key=lambda item: -result.scores[item]) == ["b", "c", "a", "d"]
    assert result.rerank_scores == {"a": 1.0, "b": 3.0, "c": 2.0}


def test_search_with_a_reranker_explains_its_scores(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=64)
    base = searcher(MemoryEngine(LEX, SEM))
    hybrid = HybridSearcher(base.engine, "idx", StubEmbedder(), base.pipeline, reranker=reranker)
    response = asyncio.run(hybrid.search(SearchRequest(query="solar energy", explain=True)))
    explained = [hit.explain.rerank_score for hit in response.results if hit.explain is not None]
    reranked = [score for score in explained if score is not None]
    assert len(reranked) == len(explained) == len(response.results)
    assert reranked == sorted(reranked, reverse=True), "results follow the cross-encoder's order"
    assert "rerank" in response.details.timings_ms


def test_a_re_ranker_that_fails_on_a_search_leaves_the_fused_order_with_a_warning(tiny_cross_encoder: Path) -> None:
    """A search degrades before it fails: the cross-encoder reading past its 64 positions costs the
    re-ranking, not the answer."""
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), max_length=512)
    long_body = " ".join(["solar"] * 200)
    sources = {item: doc(item.split("#")[0], body=long_body) for item in ("a#0", "b#0", "c#0", "d#0")}
    base = searcher(MemoryEngine(LEX, SEM, sources))
    fused = asyncio.run(base.search(SearchRequest(query="solar energy")))
    hybrid = HybridSearcher(base.engine, "idx", StubEmbedder(), base.pipeline, reranker=reranker)
    response = asyncio.run(hybrid.search(SearchRequest(query="solar energy")))
    assert [(hit.id, hit.score) for hit in response.results] == [(hit.id, hit.score) for hit in fused.results]
    assert response.search_mode == "hybrid"
    assert any(
        warning.startswith(f"re-ranking failed, the fused order is kept: re-ranker '{tiny_cross_encoder}'")
        for warning in response.warnings
    ), response.warnings


class ByLength:
    name = "length"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(len(text)) for text in texts]


def test_rerank_weight_mixes_normalized_reranker_and_fused_scores() -> None:
    # reranker a 1, b 3, c 2 -> min-max 0, 1, 0.5; fused a 0.9, b 0.8, c 0.7 -> 1, 0.5, 0
    scores = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.1}
    texts = {"a": "x", "b": "xxx", "c": "xx", "d": "xxxxxxxx"}
    half = rerank(scores, texts, "q", ByLength(), top=3, weight=0.5)
    assert half.scores == pytest.approx({"b": 1.85, "a": 1.6, "c": 1.35, "d": 0.1})
    fused_only = rerank(scores, texts, "q", ByLength(), top=3, weight=0.0)
    assert sorted(fused_only.scores, key=lambda item: -fused_only.scores[item]) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="weight"):
        rerank(scores, texts, "q", ByLength(), top=3, weight=1.5)


def test_loading_draws_no_progress_bar(tiny_cross_encoder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # transformers drew "Loading weights" on stderr, between a command's own lines; the embedder hides it too.
    CrossEncoderReranker(str(tiny_cross_encoder), max_length=64)
    assert "Loading weights" not in capfd.readouterr().err


class Broken:
    """A plugin re-ranker that breaks the contract in one of the ways a third-party model can."""

    name = "broken"

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if self.answer == "raises":
            raise RuntimeError("CUDA out of memory")
        if self.answer == "too few":
            return [1.0] * (len(texts) - 1)
        return [float("nan")] + [1.0] * (len(texts) - 1)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("raises", "RuntimeError: CUDA out of memory"),
        ("too few", "gave 3 scores for 4 texts"),
        ("nan", "gave a score that is not a finite number: nan"),
    ],
)
def test_a_plugin_re_ranker_that_breaks_leaves_the_fused_order_with_a_warning(answer: str, reason: str) -> None:
    base = searcher(MemoryEngine(LEX, SEM))
    fused = asyncio.run(base.search(SearchRequest(query="solar energy")))
    hybrid = HybridSearcher(base.engine, "idx", StubEmbedder(), base.pipeline, reranker=Broken(answer))
    response = asyncio.run(hybrid.search(SearchRequest(query="solar energy")))
    assert [(hit.id, hit.score) for hit in response.results] == [(hit.id, hit.score) for hit in fused.results]
    assert [warning for warning in response.warnings if warning.startswith("re-ranking failed")] == [
        f"re-ranking failed, the fused order is kept: re-ranker 'broken': {reason}"
    ], response.warnings
