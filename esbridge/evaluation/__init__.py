"""Evaluation and benchmarks: quality on judged datasets, latency and stage cost, measured not asserted."""
