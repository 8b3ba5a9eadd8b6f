"""Engine-side query embedding through the real clients, against recorded answers.

No engine here embeds queries (the local OpenSearch has no ML Commons, the local Elasticsearch no
inference module), so the searches are answered by a loopback server with responses in the engines'
documented format (tests/fixtures/*/README.md); the requests esbridge sends are checked against the
documented ``neural`` and ``semantic`` queries, and the capability probe's verdict against its rules.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from esbridge.attach.engine_embedding import engine_embedding_problem
from esbridge.config import Settings, load_settings
from esbridge.config.fields import FieldMap
from esbridge.engines import Capabilities, connect_async
from esbridge.query import bodies
from esbridge.query.factory import searcher_for
from esbridge.query.models import Filters, SearchRequest, SearchResponse
from tests.support.loopback import ELASTIC_HEADERS, Recording, ReplayServer, load_recording

OPENSEARCH_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "opensearch"

NEURAL_DOCS = {
    "text": {"title": 2.0, "content": 1.0},
    "content": ["content"],
    "vector": "passage_embedding",
    "tags": "genre",
    "query_embedding": "engine",
    "model_id": "aVeif4oB5Vm0Tdw8zYO2",
}
SEMANTIC_DOCS = {"text": {"title": 1.0}, "vector": "content", "semantic_text": True, "query_embedding": "engine"}


def opensearch_capabilities(*plugins: str) -> Capabilities:
    return Capabilities(
        distribution="opensearch", version="3.6.0", url="http://x", knn=True, plugins=dict.fromkeys(plugins, "3.6.0.0")
    )


def elasticsearch_capabilities(version: str, *modules: str) -> Capabilities:
    return Capabilities(
        distribution="elasticsearch", version=version, url="http://x", knn=True, plugins=dict.fromkeys(modules, version)
    )


def opensearch_recording(name: str) -> Recording:
    data = json.loads((OPENSEARCH_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return Recording(int(data["status"]), data["body"], {"Content-Type": "application/json"}, data["source"])


def run(settings: Settings, capabilities: Capabilities, request: SearchRequest) -> SearchResponse:
    async def go() -> SearchResponse:
        engine = connect_async(settings, kind=settings.engine)  # type: ignore[arg-type]
        try:
            return await searcher_for(settings, engine, None, probe=capabilities).search(request)
        finally:
            await engine.close()

    return asyncio.run(go())


def settings_for(server: ReplayServer, engine: str, fields: dict[str, Any]) -> Settings:
    return load_settings(
        url=server.url,
        engine=engine,
        index="docs",
        retries=0,
        fields={"docs": fields},
        pipeline={"fusion": "rrf", "recency": {"enabled": False}, "cache": {"results": 0}},
    )


def test_opensearch_sends_a_neural_query_with_the_model_id_and_the_filters_inside() -> None:
    server = ReplayServer()
    server.route("POST", "/docs/_search", opensearch_recording("search_neural"))
    with server.running():
        settings = settings_for(server, "opensearch", NEURAL_DOCS)
        capabilities = opensearch_capabilities("opensearch-knn", "opensearch-neural-search", "opensearch-ml")
        request = SearchRequest(query="wild west", explain=True, filters=Filters(terms={"tags": ["western"]}))
        response = run(settings, capabilities, request)
    assert response.search_mode == "hybrid"
    assert [hit.id for hit in response.results] == ["4", "2", "7"]
    assert response.results[0].title == "Wild West"
    explained = response.results[0].explain
    assert explained is not None and explained.retrievers["knn"].fields == ["passage_embedding"]
    sent = [request.json() for request in server.requests_to("POST", "/docs/_search")]
    neural = next(body["query"]["neural"]["passage_embedding"] for body in sent if "neural" in body["query"])
    assert (neural["query_text"], neural["model_id"], neural["k"]) == ("wild west", "aVeif4oB5Vm0Tdw8zYO2", 20)
    assert neural["filter"]["bool"]["filter"] == [{"terms": {"genre": ["western"]}}]


def test_opensearch_without_ml_commons_searches_lexically_and_says_why() -> None:
    server = ReplayServer()
    server.route("POST", "/docs/_search", opensearch_recording("search_neural"))
    with server.running():
        settings = settings_for(server, "opensearch", NEURAL_DOCS)
        response = run(settings, opensearch_capabilities("opensearch-knn"), SearchRequest(query="wild west"))
        sent = [request.json() for request in server.requests_to("POST", "/docs/_search")]
    assert response.search_mode == "lexical-only"
    assert any("kNN is off" in w and "opensearch-neural-search, opensearch-ml absent" in w for w in response.warnings)
    assert all("neural" not in body["query"] for body in sent)


def test_elasticsearch_sends_a_semantic_query_on_the_semantic_text_field() -> None:
    server = ReplayServer()
    answer = load_recording("search_semantic")
    server.route("POST", "/docs/_search", Recording(answer.status, answer.body, dict(ELASTIC_HEADERS), answer.source))
    with server.running():
        settings = settings_for(server, "elasticsearch", SEMANTIC_DOCS)
        capabilities = elasticsearch_capabilities("9.1.0", "x-pack-core", "x-pack-inference")
        response = run(settings, capabilities, SearchRequest(query="shoes for flat feet"))
        sent = [request.json() for request in server.requests_to("POST", "/docs/_search")]
    assert response.search_mode == "hybrid"
    assert [hit.id for hit in response.results] == ["d1", "d3"]
    semantic = next(body["query"]["bool"] for body in sent if "semantic" in json.dumps(body))
    assert semantic["must"] == [{"semantic": {"field": "content", "query": "shoes for flat feet"}}]


def test_dense_vectors_embedded_by_an_elasticsearch_endpoint_use_a_query_vector_builder() -> None:
    fields = FieldMap(text={"body": 1.0}, vector="vec", query_embedding="engine", model_id="my-e5", tags="tags")
    body = bodies.engine_embedded_body(
        "elasticsearch", "q", k=5, filters=Filters(terms={"tags": ["a"]}), num_candidates=50, fields=fields
    )
    assert body["knn"]["query_vector_builder"] == {"text_embedding": {"model_id": "my-e5", "model_text": "q"}}
    assert body["knn"]["filter"]["bool"]["filter"] == [{"terms": {"tags": ["a"]}}]
    assert "query_vector" not in body["knn"]


@pytest.mark.parametrize(
    ("capabilities", "fields", "problem"),
    [
        (opensearch_capabilities("opensearch-neural-search", "opensearch-ml"), NEURAL_DOCS, None),
        (opensearch_capabilities("opensearch-neural-search"), NEURAL_DOCS, "plugin opensearch-ml absent"),
        (elasticsearch_capabilities("9.1.0", "x-pack-inference"), SEMANTIC_DOCS, None),
        (elasticsearch_capabilities("9.1.0", "x-pack-core"), SEMANTIC_DOCS, "module x-pack-inference absent"),
        (elasticsearch_capabilities("8.14.0", "x-pack-inference"), SEMANTIC_DOCS, "no semantic query"),
        (
            elasticsearch_capabilities("9.1.0", "x-pack-ml"),
            {**SEMANTIC_DOCS, "semantic_text": False, "model_id": "e5"},
            None,
        ),
    ],
)
def test_the_probe_says_whether_the_engine_can_embed_queries(
    capabilities: Capabilities, fields: dict[str, Any], problem: str | None
) -> None:
    found = engine_embedding_problem(capabilities, FieldMap.model_validate(fields))
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
