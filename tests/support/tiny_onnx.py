"""A tiny ONNX "encoder" of any dimension: token ids looked up in a random table, with a real tokenizer beside it.

Every real model here is 384-dimensional; this stands for a model of another dimension.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.profiles import MINILM


def tiny_encoder(folder: Path, dimension: int) -> Path:
    """``folder`` with ``model.onnx`` and ``model_int8.onnx`` answering ``[batch, tokens, dimension]``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    tokenizer = locate_onnx(MINILM, "int8").tokenizer
    table = np.random.default_rng(0).standard_normal((30522, dimension)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", dimension])],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    shutil.copyfile(folder / "model.onnx", folder / "model_int8.onnx")
    shutil.copyfile(tokenizer, folder / "tokenizer.json")
    return folder
