"""A node killed (SIGKILL) under a sustained search load of four concurrent workers (``esbridge bench``'s
measurement): searches keep answering from the replicas; failures during the fail-over are counted, and
none come after the cluster has dropped the node."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from esbridge.config import Settings, load_settings
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import Engine
from esbridge.engines.base import Dialect
from esbridge.evaluation.latency_bench import LatencyReport, measure
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.integration.cluster.nodes import kill_node, node_behind, nodes_holding_primaries
from tests.support.data import SCIFACT, require

SLICE = 400
QUERIES = 160
KILL_AFTER = 40  # queries answered before the kill


def test_searches_keep_answering_while_a_node_dies(
    cluster: Engine,
    cluster_kind: Dialect,
    cluster_settings: Settings,
    cluster_alias: str,
    embedder: CachedEmbedder,
    tmp_path: Path,
    nodes_restored: None,
) -> None:
    folder = require(SCIFACT)
    source = tmp_path / "slice.jsonl"
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        docs = [json.loads(line) for line, _ in zip(lines, range(SLICE), strict=False)]
    source.write_text(
        "\n".join(json.dumps({"id": d["_id"], "title": d["title"], "text": d["text"]}) for d in docs), encoding="utf-8"
    )
    params = IndexParameters(dimension=embedder.dimension, shards=3, replicas=1)
    manager = IndexManager(cluster, cluster_alias, params)
    assert ingest(source, engine=cluster, manager=manager, embedder=embedder, options=IngestOptions()).failed == []
    cluster.refresh(cluster_alias)
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line, _ in zip(lines, range(QUERIES), strict=False)]

    url = str(cluster_settings.url)
    victim = sorted(nodes_holding_primaries(url, cluster_alias) - {node_behind(url)})[0]
    settings = load_settings(url=url, engine=cluster_kind, index=cluster_alias, timeout_s=30)
    answered = threading.Semaphore(0)
    outcome: dict[str, LatencyReport] = {}

    def load() -> None:
        outcome["report"] = measure(
            settings,
            texts,
            embedder,
            modes=("bm25", "knn", "hybrid"),
            concurrency=4,
            warmup=4,
            progress=lambda n: answered.release(),
        )

    runner = threading.Thread(target=load)
    runner.start()
    for _ in range(KILL_AFTER):
        assert answered.acquire(timeout=120)
    killed_at = time.perf_counter()
    kill_node(url, victim, cluster_kind)
    dropped_at = time.perf_counter()  # the cluster no longer lists the node
    runner.join(timeout=600)
    report = outcome["report"]

    measured = sum(values["n"] for values in report.modes.values())
    assert measured >= 0.95 * QUERIES * 3  # bm25, knn and hybrid for (nearly) every query
    after_drop = dropped_at - report.started
    late = [failure for failure in report.failures if failure.at_s > after_drop + 1.0]
    assert late == []
    late_partial = [answer for answer in report.partial if answer.at_s > after_drop + 1.0]
    assert late_partial == []
    print(
        f"killed {victim} {killed_at - report.started:.1f}s into a {report.wall_s:g}s run; dropped after "
        f"{dropped_at - killed_at:.1f}s; failures {report.errors_by_mode()}, partial answers {len(report.partial)}; "
        f"p50 ms { ({mode: values['p50'] for mode, values in report.modes.items()}) }"
    )
