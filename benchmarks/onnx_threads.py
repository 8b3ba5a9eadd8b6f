"""How ONNX Runtime should use several cores to embed documents: one batch on every thread, or one batch per thread.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/onnx_threads.py ../shared/data/beir/scifact \
        [--model BAAI/bge-small-en-v1.5] [--documents 128] [--threads 2] [--repeats 4] [--queries 200]

Embeds the first ``--documents`` titles and abstracts of a BEIR corpus (cut at 200 tokens, sorted by length,
batches of 32, as ingest does) with one int8 session per variant, the variants taking turns:

* ``intra-op, spinning``: one batch at a time on ``--threads`` intra-op threads, ONNX Runtime's defaults
  (esbridge before it ran batches side by side);
* ``intra-op, no spinning``: the same with ``session.intra_op.allow_spinning = 0``;
* ``batches side by side``: ``--threads`` batches at once, each on one thread (``OnnxSession.run`` now);
* ``one thread``: one batch at a time on one thread, the cost of the work itself.

Prints, per variant, documents per second of wall-clock time (the best repeat) and CPU seconds per
100 documents (the process's user + system time; the best repeat): CPU a variant spends beyond ``one
thread``'s is synchronisation and spinning, which the engine, the bulk writer and other processes on the
same cores do not get.

With ``--queries N``, the first N queries of the dataset instead, each behind the model's query prompt and
embedded alone as a query-serving process embeds them (no ``batches side by side``, which needs two batches);
it also prints each variant's median time per query over every repeat.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import tokenizers

from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.onnx_runtime import available_cores
from esbridge.embeddings.profiles import profile_for


def session(path: Path, threads: int, *, spinning: bool = True) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def feed(model: Any, batch: Sequence[Any]) -> dict[str, Any]:
    width = max(len(encoding.ids) for encoding in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, encoding in enumerate(batch):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    inputs = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in {item.name for item in model.get_inputs()}:
        inputs["token_type_ids"] = np.zeros_like(ids)
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="BAAI/bge-small-en-v1.5")
    parser.add_argument("--documents", type=int, default=128)
    parser.add_argument("--threads", type=int, default=available_cores())
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--queries", type=int, default=0, help="embed this many queries one at a time instead")
    args = parser.parse_args()

    files = locate_onnx(args.model, "int8")
    tokenizer = tokenizers.Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=200)
    if args.queries:
        prompt = profile_for(files.name).query_prompt
        with (args.dataset / "queries.jsonl").open(encoding="utf-8") as queries:
            texts = [prompt + json.loads(line)["text"] for _, line in zip(range(args.queries), queries, strict=False)]
        encodings = tokenizer.encode_batch(texts)
        batches = [[encoding] for encoding in encodings]
    else:
        with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as corpus:
            records = [json.loads(line) for _, line in zip(range(args.documents), corpus, strict=False)]
        encodings = tokenizer.encode_batch([f"{record['title']}. {record['text']}" for record in records])
        encodings.sort(key=lambda encoding: -len(encoding.ids))
        batches = [encodings[start : start + 32] for start in range(0, len(encodings), 32)]
    each: dict[str, list[float]] = {}

    shared, single = session(files.onnx, args.threads), session(files.onnx, 1)
    quiet = session(files.onnx, args.threads, spinning=False)
    pool = ThreadPoolExecutor(max_workers=1 if args.queries else args.threads)  # no batches side by side then

    def one_at_a_time(model: Any, name: str) -> Callable[[], None]:
        def run() -> None:
            for batch in batches:
                began = time.perf_counter()
                model.run(None, feed(model, batch))
                each.setdefault(name, []).append(time.perf_counter() - began)

        return run

    def side_by_side() -> None:
        list(pool.map(lambda batch: single.run(None, feed(single, batch)), batches))

    spinning = f"intra-op, spinning ({args.threads} threads)"
    not_spinning = f"intra-op, no spinning ({args.threads} threads)"
    variants: dict[str, Callable[[], None]] = {
        spinning: one_at_a_time(shared, spinning),
        not_spinning: one_at_a_time(quiet, not_spinning),
        f"batches side by side ({args.threads} threads)": side_by_side,
        "one thread": one_at_a_time(single, "one thread"),
    }
    if args.queries:
        del variants[f"batches side by side ({args.threads} threads)"]
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        names = list(variants) if repeat % 2 == 0 else list(reversed(variants))
        for name in names:
            cpu, wall = time.process_time(), time.perf_counter()
            variants[name]()
            timings[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    pool.shutdown()
    unit = "queries" if args.queries else "documents"
    print(f"{files.name} int8, {len(encodings)} {unit}, {args.repeats} repeats")
    for name, samples in timings.items():
        wall = min(sample[0] for sample in samples)
        cpu = min(sample[1] for sample in samples)
        rate, cost = len(encodings) / wall, 100 * cpu / len(encodings)
        median = f"   p50 {1000 * float(np.median(each[name])):.2f} ms" if args.queries and name in each else ""
        print(f"{name:40s} {rate:7.1f} {unit}/s   {cost:6.2f} CPU s / 100 {unit}{median}")


if __name__ == "__main__":
    main()
