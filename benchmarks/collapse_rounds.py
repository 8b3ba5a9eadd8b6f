"""How often a search needs deeper collapse rounds, what each round costs, and when the deeper rounds' shared
timeout runs out, at a given concurrency.

    .venv/bin/python benchmarks/collapse_rounds.py --make-corpus /tmp/long-docs.jsonl
    .venv/bin/esbridge ingest /tmp/long-docs.jsonl --url http://127.0.0.1:9200 --index long-docs
    .venv/bin/python benchmarks/collapse_rounds.py --url http://127.0.0.1:9200 --index long-docs --concurrency 16

The corpus: four documents of 150 chunks about one topic and 40 short notes, ten of them on the same topic,
so the long documents' chunks fill the first lists and the short notes are found only deeper. Without
``--queries`` (a JSON list), eight queries on the topic are asked four times each. Each search is timed, and
each retrieval round (``HybridSearcher._retrieve``) with the depth it asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from esbridge.config import load_settings
from esbridge.query import orchestrator
from esbridge.query.api import open_query_embedder, searcher
from esbridge.query.models import SearchRequest, SearchResponse

TOPIC = "solar panel inverter battery grid roof sunlight energy watt kilowatt efficiency install mount cable"
OTHER = "bread flour yeast oven dough bake crust sugar butter salt water knead rise loaf recipe"
FILLER = " the a of and to in for with on at by from that this is are was be it as"
QUERIES = ["solar panel battery", "inverter grid", "roof mount", "kilowatt efficiency", "energy cable", "solar energy"]

ROUNDS: list[tuple[int, float]] = []
"""(depth asked, milliseconds) of every retrieval round"""


def make_corpus(path: Path) -> None:
    chance = random.Random(7)  # noqa: S311 (a benchmark's corpus, not a secret)

    def words(pool: str, count: int) -> str:
        choices = (pool + FILLER).split()
        return " ".join(chance.choice(choices) for _ in range(count))

    with path.open("w", encoding="utf-8") as out:
        for number in range(4):
            text = "\n\n".join(words(TOPIC, 120) for _ in range(150))
            out.write(json.dumps({"id": f"long{number}", "title": f"Solar handbook {number}", "text": text}) + "\n")
        for number in range(40):
            text = words(TOPIC if number % 4 == 0 else OTHER, 150)
            out.write(json.dumps({"id": f"note{number}", "title": f"Note {number}", "text": text}) + "\n")


def timed_rounds() -> None:
    retrieve = orchestrator.HybridSearcher._retrieve

    async def timed(self: Any, retrieval: Any, request: Any, plan: Any, native: Any) -> Any:
        started = time.perf_counter()
        try:
            return await retrieve(self, retrieval, request, plan, native)
        finally:
            ROUNDS.append((plan.top_k, (time.perf_counter() - started) * 1000))

    orchestrator.HybridSearcher._retrieve = timed  # type: ignore[method-assign]


async def run(args: argparse.Namespace, queries: list[str]) -> tuple[list[SearchResponse], float]:
    settings = load_settings(url=args.url, index=args.index)
    pipeline = settings.pipeline.model_copy(update={"cache": settings.pipeline.cache.model_copy(update={"results": 0})})
    settings = settings.model_copy(update={"pipeline": pipeline})
    embedder, problem = open_query_embedder(settings)
    async with searcher(settings, embedder, model_problem=problem) as hybrid:
        await hybrid.search(SearchRequest(query="warm up", top_n=args.top_n))
        ROUNDS.clear()
        gate = asyncio.Semaphore(args.concurrency)

        async def one(query: str) -> SearchResponse:
            async with gate:
                return await hybrid.search(SearchRequest(query=query, top_n=args.top_n))

        started = time.perf_counter()
        answers = await asyncio.gather(*(one(query) for query in queries))
        return list(answers), time.perf_counter() - started


def report(answers: list[SearchResponse], wall: float, args: argparse.Namespace) -> None:
    rounds = [answer.details.rounds for answer in answers]
    short = sum(1 for answer in answers if len(answer.results) < args.top_n)
    took = sorted(answer.took_ms for answer in answers)
    print(
        f"concurrency {args.concurrency}, top_n {args.top_n}: {len(answers)} searches in {wall:.1f} s; rounds "
        f"{ {count: rounds.count(count) for count in sorted(set(rounds))} }; short of top_n {short}; "
        f"took_ms p50 {took[len(took) // 2]:.0f}, p90 {took[int(len(took) * 0.9)]:.0f}, max {took[-1]:.0f}"
    )
    for depth in sorted({depth for depth, _ in ROUNDS}):
        times = sorted(ms for asked, ms in ROUNDS if asked == depth)
        print(f"  depth {depth}: {len(times)} rounds, p50 {times[len(times) // 2]:.0f} ms, max {times[-1]:.0f} ms")
    for warning in sorted({warning for answer in answers for warning in answer.warnings}):
        print(f"  warning: {warning}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--make-corpus", type=Path, help="write the corpus as JSONL here and stop")
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--index", default="long-docs")
    parser.add_argument("--queries", type=Path, help="a JSON list of queries (default: the topic's, 4 times)")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--top-n", type=int, default=10)
    args = parser.parse_args()
    if args.make_corpus:
        make_corpus(args.make_corpus)
        return
    queries = json.loads(args.queries.read_text("utf-8")) if args.queries else QUERIES * 4
    timed_rounds()
    answers, wall = asyncio.run(run(args, queries))
    report(answers, wall, args)


if __name__ == "__main__":
    main()
