"""What the embedded engine says of itself when probed: the libraries behind it and what it cannot do."""

from __future__ import annotations

import sqlite3

import tantivy
import usearch

import esbridge
from esbridge.engines.capabilities import OPENSEARCH_NEURAL_FEATURES, Capabilities


def describe(url: str) -> Capabilities:
    return Capabilities(
        distribution="embedded",
        version=esbridge.__version__,
        url=url,
        cluster_name="embedded",
        health="green",
        knn=True,
        plugins={
            "sqlite": sqlite3.sqlite_version,
            "tantivy": str(getattr(tantivy, "__version__", "?")).removeprefix("tantivy "),  # ("tantivy v0.27.0, ...")
            "usearch": str(getattr(usearch, "__version__", "?")),
        },
        native_hybrid=dict.fromkeys(OPENSEARCH_NEURAL_FEATURES, False),
        features={"text_analysis": True, "reindex": True},
        notes=[
            "embedded: BM25 from tantivy (k1 1.2; the index's b up to 0.75, by padding document lengths), HNSW kNN "
            "from usearch (exact without index.knn), built-in analyzers in tantivy, custom ones emulated in Python",
            "no native hybrid query: esbridge fuses results client-side",
        ],
    )
