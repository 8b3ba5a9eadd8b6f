"""Hybrid query orchestration: retrieval, fusion, graph expansion, recency and result shaping."""
