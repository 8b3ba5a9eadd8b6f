"""Every ``knn_vector`` field that the engine-facing tests, the benchmarks and the shipped mappings create names
OpenSearch's ``lucene`` k-NN engine.

k-NN's default engine is faiss, whose native libraries the k-NN plugin from Maven Central lacks (what
``scripts/engines`` runs, see docs/engines.md): the first refresh of a faiss index with a document in it dies on
``UnsatisfiedLinkError`` in the node's refresh thread, and the request waits for ever, on an engine other work
shares. A field mapped without a ``method`` gets that default, so a method with ``engine: lucene`` is required.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tests/integration", "tests/contract", "benchmarks")


def _value(node: ast.Dict, key: str) -> ast.expr | None:
    for name, value in zip(node.keys, node.values, strict=True):
        if isinstance(name, ast.Constant) and name.value == key:
            return value
    return None


def python_problems(source: str) -> Iterator[str]:
    """Each ``knn_vector`` dict literal in ``source`` that does not name the lucene engine, by line."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Dict):
            continue
        kind = _value(node, "type")
        if not (isinstance(kind, ast.Constant) and kind.value == "knn_vector"):
            continue
        method = _value(node, "method")
        if method is None:
            yield f"line {node.lineno}: a knn_vector without a method (k-NN's default engine is faiss)"
        elif isinstance(method, ast.Dict):
            engine = _value(method, "engine")
            if not (isinstance(engine, ast.Constant) and engine.value == "lucene"):
                shown = ast.unparse(engine) if engine is not None else "none (k-NN's default: faiss)"
                yield f"line {node.lineno}: a knn_vector whose method's engine is {shown}, not 'lucene'"


def json_problems(value: Any, path: str = "") -> Iterator[str]:
    """Each ``knn_vector`` object in a mapping file that does not name the lucene engine, by its path."""
    if isinstance(value, dict):
        if value.get("type") == "knn_vector":
            method = value.get("method")
            engine = method.get("engine") if isinstance(method, dict) else None
            if engine != "lucene":
                yield f"{path or '/'}: a knn_vector whose engine is {engine or 'the default (faiss)'}, not 'lucene'"
        for key, inner in value.items():
            yield from json_problems(inner, f"{path}/{key}")
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            yield from json_problems(inner, f"{path}/{n}")


def test_the_engine_facing_tests_and_benchmarks_map_knn_vectors_on_lucene() -> None:
    files = sorted(path for folder in SCANNED for path in (ROOT / folder).rglob("*.py"))
    assert files, f"no Python files under {SCANNED} in {ROOT}"
    problems = [
        f"{path.relative_to(ROOT)} {problem}"
        for path in files
        for problem in python_problems(path.read_text(encoding="utf-8"))
    ]
    assert problems == []


def test_the_shipped_mappings_map_knn_vectors_on_lucene() -> None:
    files = sorted((ROOT / "mappings").glob("*.json"))
    assert files
    problems = [
        f"{path.name} {problem}" for path in files for problem in json_problems(json.loads(path.read_text("utf-8")))
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('f = {"type": "knn_vector", "dimension": 3}', "line 1: a knn_vector without a method"),
        ('f = {"type": "knn_vector", "method": {"engine": "faiss"}}', "engine is 'faiss', not 'lucene'"),
        ('f = {"type": "knn_vector", "method": {"name": "hnsw"}}', "engine is none (k-NN's default: faiss)"),
    ],
)
def test_a_knn_vector_off_lucene_is_named(source: str, found: str) -> None:
    assert [problem for problem in python_problems(source) if found in problem] != []


def test_a_knn_vector_on_lucene_or_with_a_method_built_elsewhere_passes() -> None:
    lucene = 'f = {"type": "knn_vector", "method": {"name": "hnsw", "engine": "lucene"}}'
    built = 'f = {"type": "knn_vector", "dimension": 3, "method": method}\ng = {"type": "dense_vector"}'
    assert list(python_problems(lucene)) + list(python_problems(built)) == []
    assert list(json_problems({"properties": {"v": {"type": "knn_vector"}}})) == [
        "/properties/v: a knn_vector whose engine is the default (faiss), not 'lucene'"
    ]
