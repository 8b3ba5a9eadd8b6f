from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.analysis import analysis_probes
from esbridge.mappings.schema import FIELDS, IndexParameters, render_index

MAPPINGS = Path(__file__).resolve().parents[3] / "mappings"


@pytest.mark.parametrize("dialect", ["opensearch", "elasticsearch"])
def test_checked_in_mapping_equals_the_rendering(dialect: str) -> None:
    checked_in = json.loads((MAPPINGS / f"{dialect}.json").read_text(encoding="utf-8"))
    rendered = render_index(dialect, IndexParameters())  # type: ignore[arg-type]
    assert checked_in == rendered, (
        f"mappings/{dialect}.json is stale: esbridge mapping show --dialect {dialect} > mappings/{dialect}.json"
    )


def test_the_schema_has_every_field_the_index_needs() -> None:
    names = {spec.name for spec in FIELDS}
    assert names >= {
        "doc_id", "chunk_id", "chunk_index", "title", "body", "headings", "code", "path", "tags", "aliases",
        "entity_type", "status", "category", "links", "created_at", "modified_at", "metadata", "metadata_text",
        "vector",
    }  # fmt: skip


def test_opensearch_rendering() -> None:
    body = render_index("opensearch", IndexParameters(dimension=768, hnsw_m=32, bm25_k1=1.5, bm25_b=0.6))
    index = body["settings"]["index"]
    assert index["knn"] is True
    assert index["similarity"]["default"] == {"type": "BM25", "k1": 1.5, "b": 0.6}
    properties = body["mappings"]["properties"]
    assert properties["vector"]["type"] == "knn_vector"
    assert properties["vector"]["dimension"] == 768
    assert properties["vector"]["method"]["engine"] == "lucene"
    assert properties["vector"]["method"]["parameters"]["m"] == 32
    assert properties["body"]["analyzer"] == "english"
    assert properties["body"]["fields"]["std"]["analyzer"] == "standard"
    assert "similarity" not in properties["body"]
    assert properties["code"]["analyzer"] == "esbridge_code"
    assert properties["metadata"] == {"type": "object", "enabled": False}
    assert properties["modified_at"] == {"type": "date"}
    assert body["mappings"]["dynamic"] == "strict"


def test_elasticsearch_rendering() -> None:
    body = render_index("elasticsearch", IndexParameters(dimension=384, hnsw_ef_construction=200))
    assert "knn" not in body["settings"]["index"]
    vector = body["mappings"]["properties"]["vector"]
    assert vector == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 200},
    }


def test_code_analyzer_keeps_identifiers_whole_and_split() -> None:
    analysis = render_index("opensearch")["settings"]["index"]["analysis"]
    identifier_filter = analysis["filter"]["esbridge_identifier_parts"]
    assert identifier_filter["type"] == "word_delimiter_graph"
    assert identifier_filter["preserve_original"] is True
    assert identifier_filter["split_on_case_change"] is True
    assert analysis["analyzer"]["esbridge_code"]["filter"] == ["esbridge_identifier_parts", "lowercase"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dimension": 0}, "dimension"),
        ({"hnsw_m": 1}, "hnsw m"),
        ({"hnsw_ef_construction": 5}, "ef_construction"),
        ({"bm25_b": 1.5}, "BM25"),
    ],
)
def test_invalid_parameters_are_named(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IndexParameters(**kwargs)  # type: ignore[arg-type]


def test_core_analysis_uses_only_analyzers_every_build_has() -> None:
    body = render_index("elasticsearch", IndexParameters(analysis="core"))
    assert "analysis" not in body["settings"]["index"]
    properties = body["mappings"]["properties"]
    assert properties["body"]["analyzer"] == "standard"
    assert properties["code"]["analyzer"] == "standard"
    assert properties["path"]["fields"]["text"]["analyzer"] == "simple"
    assert properties["title"]["fields"]["std"]["analyzer"] == "standard"
    assert render_index("opensearch", IndexParameters(analysis="auto")) == render_index("opensearch")


def test_default_bm25_parameters_are_the_evaluated_ones_in_settings_and_schema() -> None:
    # k1 1.2, b 0.4 were chosen on three collections (docs/evaluation-bm25.md); settings and schema must agree.
    from esbridge.config.settings import Settings
    from esbridge.mappings.parameters import parameters_from

    rendered = render_index("opensearch", parameters_from(Settings()))
    assert rendered["settings"]["index"]["similarity"]["default"] == {"type": "BM25", "k1": 1.2, "b": 0.4}
    assert render_index("opensearch", IndexParameters()) == rendered


def _analyzers_named(mappings: dict[str, Any]) -> set[str]:
    named: set[str] = set()
    for field in mappings["properties"].values():
        if "analyzer" in field:
            named.add(field["analyzer"])
        named |= {sub["analyzer"] for sub in field.get("fields", {}).values() if "analyzer" in sub}
    return named


def test_analysis_probes_use_every_component_the_full_mapping_needs() -> None:
    body = render_index("elasticsearch", IndexParameters(analysis="full"))
    defined = body["settings"]["index"]["analysis"]
    probes = analysis_probes()
    probed_analyzers = {probe["analyzer"] for probe in probes if "analyzer" in probe}
    # every analyzer the mapping names is either defined in its settings, built into every build, or probed
    undefined = _analyzers_named(body["mappings"]) - set(defined["analyzer"])
    assert undefined - {"standard", "simple"} == {"english"}
    assert probed_analyzers == {"english"}
    chains = [(probe["tokenizer"], probe["filter"]) for probe in probes if "tokenizer" in probe]
    expected = [
        (defined["tokenizer"][custom["tokenizer"]], [defined["filter"].get(step, step) for step in custom["filter"]])
        for _, custom in sorted(defined["analyzer"].items())
    ]
    assert chains == expected
    assert {"type": "pattern", "pattern": "[^\\w.$]+"} in [tokenizer for tokenizer, _ in chains]
    assert any(
        step.get("type") == "word_delimiter_graph" for _, steps in chains for step in steps if isinstance(step, dict)
    )
    assert all(probe["text"] for probe in probes)
