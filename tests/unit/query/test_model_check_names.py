"""What the model check makes of the mappings behind a name over several indices (``searched_mapping``): the
engines' own answers are tested in tests/integration/test_model_check_streams.py; here, the verdict and its
wording for each kind of name, from the mappings ``get_mappings`` gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from esbridge import errors
from esbridge.embeddings.identity import META_KEY, PENDING_KEY, identity_of
from esbridge.engines.base import Engine
from esbridge.engines.index_templates import AliasTemplate
from esbridge.query.model_check import searched_mapping
from tests.support.hashing import HashingEmbedder, OtherHashingEmbedder

RECORD = identity_of(HashingEmbedder()).to_meta()


class Mappings:
    """Only what ``searched_mapping`` reads of an engine: the mappings behind a name."""

    url = "http://engine.test:9200"

    def __init__(self, mappings: Mapping[str, Mapping[str, Any]]) -> None:
        self.mappings = mappings

    def get_mappings(self, index: str) -> dict[str, dict[str, Any]]:
        return {name: dict(mapping) for name, mapping in self.mappings.items()}


class Templated(Mappings):
    """An engine with index templates, whose alias is rolled over: ``alias_template`` answers ``found``, or
    raises it."""

    def __init__(self, mappings: Mapping[str, Mapping[str, Any]], found: AliasTemplate | Exception) -> None:
        super().__init__(mappings)
        self.found = found

    def alias_template(self, alias: str) -> AliasTemplate | None:
        if isinstance(self.found, Exception):
            raise self.found
        return self.found

    def data_stream_template(self, name: str) -> str | None:
        return None

    def get_index_template(self, name: str) -> dict[str, Any]:
        raise AssertionError("the model check reads no template body")

    put_index_template = resolved_template_mappings = get_index_template


def mapping(
    record: Mapping[str, Any] | None = RECORD, dimension: int | None = 32, pending: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    properties = {"vector": {"type": "knn_vector", "dimension": dimension}} if dimension else {}
    meta = {key: value for key, value in ((META_KEY, record), (PENDING_KEY, pending)) if value is not None}
    return {"properties": properties, "_meta": meta}


def searched(mappings: Mapping[str, Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    return searched_mapping(cast(Engine, Mappings(mappings)), name)


def test_backing_indices_of_one_model_are_searched() -> None:
    behind = {f".ds-logs-00000{n}": mapping() for n in (1, 2, 3)}
    assert searched(behind, "logs")["_meta"][META_KEY]["name"] == "hashing-32"


def test_a_data_stream_whose_backing_indices_differ_is_refused_naming_each_and_its_template() -> None:
    behind = {".ds-logs-000002": mapping(None, None), ".ds-logs-000001": mapping()}
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched(behind, "logs")
    message = str(refused.value)
    assert message.startswith("data stream 'logs' points to several indices whose vectors are not of one model (")
    assert ".ds-logs-000001: hashing-32 (" in message
    assert ".ds-logs-000002: no model recorded, no vector field mapped" in message  # not "no-dimensional vectors"
    assert message.index(".ds-logs-000001") < message.index(".ds-logs-000002")
    assert message.endswith(
        "record the model in the template's mapping _meta (esbridge_model) so that each rollover carries it, "
        "and in each backing index that lacks it (`esbridge index record-model --index logs --in-template` does both)"
    )


def test_an_alias_over_indices_of_two_models_is_refused_naming_each_and_the_way_out() -> None:
    behind = {"notes-v2": mapping(identity_of(OtherHashingEmbedder()).to_meta()), "notes-v1": mapping()}
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched(behind, "notes")
    message = str(refused.value)
    assert message.startswith("alias 'notes' points to several indices whose vectors are not of one model (notes-v1")
    assert "notes-v2: other-hashing-32 (" in message
    assert message.endswith("Point the alias at one index (POST _aliases), or search one of them (--index NAME)")


def test_the_index_with_an_unfinished_re_embedding_is_the_one_checked() -> None:
    behind = {".ds-logs-000001": mapping(), ".ds-logs-000002": mapping(pending=RECORD)}
    assert PENDING_KEY in searched(behind, "logs")["_meta"]


def test_a_name_behind_which_there_is_no_index_is_not_found() -> None:
    with pytest.raises(errors.IndexNotFound, match=r"no index matches 'logs-\*'") as missing:
        searched({}, "logs-*")
    assert missing.value.url == Mappings.url


def refusal(engine: Mappings, name: str) -> str:
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched_mapping(cast(Engine, engine), name)
    return str(refused.value)


ROLLED = {"logs-000001": mapping(), "logs-000002": mapping(None)}


def test_an_alias_whose_next_index_a_template_makes_is_told_record_model_in_template() -> None:
    message = refusal(Templated(ROLLED, AliasTemplate("logs-000002", "logs-000003", "logs-template")), "logs")
    assert message.startswith("alias 'logs' points to several indices whose vectors are not of one model (")
    assert message.endswith(  # before: "Point the alias at one index (POST _aliases), ..."
        "Alias logs's next index (logs-000003, made when it is rolled over) takes its mapping _meta from index "
        "template logs-template, not from the older indices: record the model in the template's mapping _meta "
        "(esbridge_model) so that each rollover carries it, and in each index that lacks it "
        "(`esbridge index record-model --index logs --in-template` does both)"
    )


@pytest.mark.parametrize(
    "found",
    [
        AliasTemplate("logs-000002", "logs-000003", None, "no composable index template ...", matched=False),
        errors.EngineError("403 Forbidden", url=Mappings.url, operation="read index templates", status=403),
    ],
)
def test_an_alias_no_template_of_its_own_makes_keeps_the_way_out_it_had(found: AliasTemplate | Exception) -> None:
    assert refusal(Templated(ROLLED, found), "logs").endswith(
        "Point the alias at one index (POST _aliases), or search one of them (--index NAME)"
    )


def spaced(vector: Mapping[str, Any], name: str = "vector") -> dict[str, Any]:
    """A mapping recording hashing-32 whose ``name`` field is ``vector``."""
    return {"properties": {name: dict(vector)}, "_meta": {META_KEY: RECORD}}


COSINESIMIL = {"type": "knn_vector", "dimension": 32, "method": {"name": "hnsw", "space_type": "cosinesimil"}}


def test_indices_of_one_model_in_different_spaces_are_refused_naming_each_space() -> None:
    # No space named: OpenSearch's default, l2, as index inspect reads it.
    behind = {"notes-v1": spaced(COSINESIMIL), "notes-v2": spaced({"type": "knn_vector", "dimension": 32})}
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched(behind, "notes")
    message = str(refused.value)
    assert message.startswith(
        "alias 'notes' points to several indices whose vector field vector is not of one space "
        "(notes-v1: cosinesimil; notes-v2: l2)"
    )
    assert "point the alias at indices of one space (POST _aliases), search one of them (--index NAME)" in message


def test_the_searched_field_is_the_one_whose_space_is_compared() -> None:
    dense = {"type": "dense_vector", "dims": 32, "index": True}
    behind = {
        "docs-a": spaced({**dense, "similarity": "dot_product"}, "body.embedding"),
        "docs-b": spaced(dense, "body.embedding"),  # Elasticsearch's default: cosine
    }
    assert searched(behind, "docs")["_meta"][META_KEY]["name"] == "hashing-32", "vector is not mapped: not compared"
    with pytest.raises(errors.AmbiguousAlias, match=r"docs-a: dot_product; docs-b: cosine"):
        searched_mapping(cast(Engine, Mappings(behind)), "docs", "body.embedding")


def test_indices_of_one_space_are_searched_and_a_trained_models_unknown_space_is_not_held_against_them() -> None:
    trained = {"type": "knn_vector", "dimension": 32, "model_id": "ivfpq"}
    behind = {"a": spaced(COSINESIMIL), "b": spaced({**COSINESIMIL}), "c": spaced(trained)}
    assert searched(behind, "all")["_meta"][META_KEY]["name"] == "hashing-32"


def test_backing_indices_in_different_spaces_name_the_data_stream() -> None:
    behind = {".ds-logs-000001": spaced(COSINESIMIL), ".ds-logs-000002": spaced({**COSINESIMIL, "method": {}})}
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched(behind, "logs")
    assert str(refused.value).startswith("data stream 'logs' points to several indices whose vector field vector")
    assert "search one backing index (--index NAME)" in str(refused.value)


def test_the_searched_fields_dimension_is_the_one_compared() -> None:
    """An attached alias whose vector field is not esbridge's ``vector``: indices recording no model whose
    ``emb`` fields differ in dimension are refused, naming each dimension."""
    behind = {
        "products-a": {"properties": {"emb": {**COSINESIMIL, "dimension": 384}}},
        "products-b": {"properties": {"emb": {**COSINESIMIL, "dimension": 768}}},
    }
    with pytest.raises(errors.AmbiguousAlias) as refused:
        searched_mapping(cast(Engine, Mappings(behind)), "products", "emb")
    assert "384" in str(refused.value) and "768" in str(refused.value)
    assert "products-a" in str(refused.value) and "products-b" in str(refused.value)
