"""What counting every match costs a BM25 retriever: esbridge's BM25 request with ``track_total_hits: false``,
the engines' default (exact up to 10,000) and ``true``, alternated query by query on one index, with the
engine's own ``took`` and the client's wall clock, and whether the hits agree.

    .venv/bin/python benchmarks/track_total_hits.py --url http://127.0.0.1:9200 --size 300000
    .venv/bin/python benchmarks/track_total_hits.py --folder /tmp/emb-b1m --reuse     # an embedded data directory

Chunks are those of ``bench_embedded.py`` (titles and 60-word windows of SciFact abstracts and vault notes) without
vectors; queries are three words of their vocabulary, as there.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from pathlib import Path
from typing import Any

from bench_embedded import chunk, texts

from esbridge.config import load_settings
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.factory import connect
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters

MODES: dict[str, Any] = {"false": False, "default (10,000)": None, "true": True}


def _load(engine: Engine, alias: str, size: int, corpus: list[tuple[str, str]], vocabulary: list[str]) -> None:
    IndexManager(engine, alias, IndexParameters(dimension=4, analysis="full")).create()
    rng = random.Random(11)  # noqa: S311 (a benchmark's sample, not a secret)
    began = time.perf_counter()
    for first in range(0, size, 2000):
        last = min(size, first + 2000)
        actions = [BulkAction("index", f"c{i}", chunk(i, corpus, vocabulary, rng)) for i in range(first, last)]
        result = engine.bulk(alias, actions)
        assert not result.failed, result.failed[:1]
    engine.refresh(alias)
    print(f"{size:,} chunks written in {time.perf_counter() - began:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    place = parser.add_mutually_exclusive_group(required=True)
    place.add_argument("--url", help="an OpenSearch or Elasticsearch cluster")
    place.add_argument("--folder", type=Path, help="an embedded data directory")
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--alias", default="bench", help="the alias searched (and created unless --reuse)")
    parser.add_argument("--reuse", action="store_true", help="search the index a previous run left")
    args = parser.parse_args()
    engine: Engine = EmbeddedEngine(args.folder) if args.folder else connect(load_settings(url=args.url))
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    if not args.reuse:
        _load(engine, args.alias, args.size, corpus, vocabulary)
    rng = random.Random(11)  # noqa: S311
    words = [w for w in vocabulary if len(w) > 5]
    phrases = [" ".join(rng.sample(words, 3)) for _ in range(args.queries)]
    took: dict[str, list[float]] = {mode: [] for mode in MODES}
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    differ = 0
    for turn in range(args.turns):
        for number, phrase in enumerate(phrases):
            body = bodies.bm25_body(engine.dialect, phrase, size=10, filters=Filters())
            order = list(MODES) if (turn + number) % 2 else list(reversed(MODES))
            answers = {}
            for mode in order:
                sent = {key: value for key, value in body.items() if key != "track_total_hits"}
                if MODES[mode] is not None:
                    sent["track_total_hits"] = MODES[mode]
                began = time.perf_counter()
                result = engine.search(args.alias, sent)
                wall[mode].append(time.perf_counter() - began)
                took[mode].append(result.took_ms)
                answers[mode] = [(hit.id, round(hit.score, 4)) for hit in result.hits]
            differ += len({tuple(answer) for answer in answers.values()}) > 1
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    searches = args.turns * len(phrases)
    print(f"{searches} searches per mode, alternated; load {load}; answers differing: {differ}")
    for mode in MODES:
        print(
            f"{mode:24} took mean {statistics.mean(took[mode]):5.2f} ms, p50 {statistics.median(took[mode]):4.0f} ms; "
            f"wall p50 {statistics.median(wall[mode]) * 1000:6.2f} ms, "
            f"mean {statistics.mean(wall[mode]) * 1000:6.2f} ms"
        )


if __name__ == "__main__":
    main()
