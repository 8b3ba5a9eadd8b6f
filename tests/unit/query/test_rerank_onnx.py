"""The real ms-marco-MiniLM-L-12-v2 cross-encoder (int8 ONNX, esbridge's model folder) on a SciFact slice."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from esbridge.config.pipeline import RerankSettings
from esbridge.embeddings.onnx_cross_encoder import OnnxCrossEncoder, call_batch_size, sigmoid
from esbridge.embeddings.profiles import BGE_SMALL, MS_MARCO_RERANKER
from esbridge.errors import ModelUnavailable
from esbridge.query.rerank import RERANKERS
from tests.support.data import SCIFACT
from tests.support.models import require_stored

QUERIES = 10
DISTRACTORS = 4


def test_sigmoid_by_hand() -> None:
    assert sigmoid(0.0) == 0.5
    assert sigmoid(2.0) == pytest.approx(0.8807970779778823)
    assert sigmoid(-800.0) == 0.0


@pytest.fixture(scope="module")
def reranker() -> OnnxCrossEncoder:
    require_stored(MS_MARCO_RERANKER, "int8")
    made = RERANKERS.get_named("cross-encoder")(RerankSettings(backend="onnx", precision="int8"))
    assert isinstance(made, OnnxCrossEncoder)
    return made


def test_the_cross_encoder_puts_scifacts_relevant_abstract_first(reranker: OnnxCrossEncoder) -> None:
    """The first 10 test queries, each against its judged abstract and 4 random others: the judged one
    should come first for most (a random order would put it first for 20%)."""
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"no SciFact at {SCIFACT}")
    corpus = {}
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            corpus[record["_id"]] = f"{record['title']}\n{record['text']}"
    queries = {}
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[record["_id"]] = record["text"]
    relevant: dict[str, str] = {}
    for row in (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, _ = row.split("\t")
        relevant.setdefault(query_id, doc_id)
    chooser = random.Random(7)
    ids = sorted(corpus)
    firsts = 0
    reciprocal = 0.0
    for query_id, doc_id in list(relevant.items())[:QUERIES]:
        others = [other for other in chooser.sample(ids, DISTRACTORS + 1) if other != doc_id][:DISTRACTORS]
        scores = reranker.score(queries[query_id], [corpus[doc_id], *(corpus[other] for other in others)])
        assert all(0.0 < score < 1.0 for score in scores)
        rank = 1 + sum(score > scores[0] for score in scores[1:])
        firsts += rank == 1
        reciprocal += 1.0 / rank
    assert firsts >= 8, f"the judged abstract came first for {firsts} of {QUERIES} queries"
    assert reciprocal / QUERIES >= 0.85


def test_scores_do_not_depend_on_the_batch(reranker: OnnxCrossEncoder) -> None:
    texts = ["solar panels make electricity", "bread is baked", "a" * 3000]
    together = reranker.score("how do solar panels work", texts)
    alone = [reranker.score("how do solar panels work", [text])[0] for text in texts]
    # int8 weights with dynamically quantized activations: padding in a batch shifts the activation
    # scale a little, so a batch scores within 0.02 of one-at-a-time, not bit for bit.
    assert together == pytest.approx(alone, abs=0.02)
    assert together[0] > together[1]
    assert reranker.score("q", []) == []


def test_a_call_is_cut_into_four_batches_at_most_the_configured_size() -> None:
    assert [call_batch_size(pairs, 16) for pairs in (1, 3, 4, 5, 20, 30, 50, 64, 65, 500)] == [
        1,
        1,
        1,
        2,
        5,
        8,
        13,
        16,
        16,
        16,
    ]
    assert call_batch_size(20, 2) == 2


def test_scores_do_not_depend_on_the_thread_count(reranker: OnnxCrossEncoder) -> None:
    """The batches of a call depend on how many pairs it has, not on the threads that run them."""
    one = OnnxCrossEncoder(MS_MARCO_RERANKER, precision="int8", threads=1)
    texts = [f"solar panel number {n} turns sunlight into electricity " * (1 + n % 5) for n in range(20)]
    assert one.score("how do solar panels work", texts) == reranker.score("how do solar panels work", texts)


def test_a_call_still_running_past_its_budget_does_not_change_the_next_calls_scores(reranker: OnnxCrossEncoder) -> None:
    """A search's re-ranking that went past pipeline.rerank.timeout_s runs on beside the next one, on the same
    session and tokenizer: each gets the scores it gets alone."""
    long_texts = [f"solar panel number {n} turns sunlight into electricity " * (2 + n % 7) for n in range(40)]
    short_texts = ["wind turbines generate power", "sourdough bread needs a starter", "photovoltaic cells"] * 3
    alone_long = reranker.score("how do solar panels work", long_texts)
    alone_short = reranker.score("what makes electricity", short_texts)
    straggler: list[list[float]] = []
    thread = threading.Thread(target=lambda: straggler.append(reranker.score("how do solar panels work", long_texts)))
    thread.start()
    beside = [reranker.score("what makes electricity", short_texts) for _ in range(3)]
    thread.join(timeout=120)
    assert beside == [alone_short] * 3
    assert straggler == [alone_long]


def test_an_embedding_model_named_as_the_re_ranker_is_refused_when_it_loads() -> None:
    """An embedding export answers token states, not one logit per pair; it failed each search with
    numpy's "only 0-dimensional arrays can be converted to Python scalars"."""
    require_stored(BGE_SMALL, "int8")
    settings = RerankSettings(model=BGE_SMALL, backend="onnx", precision="int8")
    with pytest.raises(ModelUnavailable, match=r"re-ranker 'BAAI/bge-small-en-v1.5'.*no cross-encoder"):
        RERANKERS.get_named("cross-encoder")(settings)


def test_a_missing_re_ranker_is_named_as_the_re_ranker_not_as_the_embedding_model(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    settings = RerankSettings(model=str(missing), backend="onnx", precision="int8")
    with pytest.raises(ModelUnavailable) as raised:
        RERANKERS.get_named("cross-encoder")(settings)
    assert str(raised.value) == f"re-ranker {str(missing)!r}: model folder {missing} does not exist"
