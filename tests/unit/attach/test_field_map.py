"""The field map: validation, request bodies built from it, stored fields read back under esbridge's names."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from esbridge import errors
from esbridge.config import load_settings
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap, canonical_source
from esbridge.ids import document_of
from esbridge.query import bodies
from esbridge.query.models import Filters

PRODUCTS = FieldMap(
    text={"name": 2.0, "body": 1.0},
    content=["body"],
    vector="embedding",
    dimension=4,
    title="name",
    date="meta.updated",
    tags="labels",
)


def test_a_field_map_without_text_fields_is_refused_with_the_reason() -> None:
    with pytest.raises(ValidationError, match="BM25 needs at least one text field"):
        FieldMap(text={})


def test_a_boost_of_zero_or_less_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="not so for name"):
        FieldMap(text={"name": 0.0, "body": 1.0})


def test_a_dimension_without_a_vector_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="no vector field is named"):
        FieldMap(text={"body": 1.0}, dimension=384)


def test_engine_side_embedding_needs_a_model_id() -> None:
    with pytest.raises(ValidationError, match="needs model_id"):
        FieldMap(text={"body": 1.0}, vector="embedding", query_embedding="engine")


def test_bm25_searches_the_mapped_fields_with_their_boosts() -> None:
    body = bodies.bm25_body("opensearch", "red shoes", size=5, filters=Filters(), fields=PRODUCTS)
    should = body["query"]["bool"]["should"]
    assert should == [{"multi_match": {"query": "red shoes", "type": "cross_fields", "fields": ["name^2", "body"]}}]
    # No status field is mapped: nothing is left out for its lifecycle state.
    assert "must_not" not in body["query"]["bool"]


def test_knn_searches_the_mapped_vector_with_the_filters_inside() -> None:
    filters = Filters(terms={"tags": ["sale"]}, modified_after=datetime(2026, 1, 1, tzinfo=timezone.utc))
    body = bodies.knn_body("elasticsearch", [0.1, 0.2], k=3, filters=filters, num_candidates=10, fields=PRODUCTS)
    assert body["knn"]["field"] == "embedding"
    assert body["knn"]["filter"]["bool"]["filter"] == [
        {"terms": {"labels": ["sale"]}},
        # The bounds are ISO 8601 whatever format the index gives its date field.
        {"range": {"meta.updated": {"gte": "2026-01-01T00:00:00+00:00", "format": "strict_date_optional_time"}}},
    ]
    opensearch = bodies.knn_body("opensearch", [0.1, 0.2], k=3, filters=Filters(), num_candidates=10, fields=PRODUCTS)
    assert list(opensearch["query"]["knn"]) == ["embedding"]


def test_a_filter_on_an_unmapped_field_is_an_error_naming_it() -> None:
    with pytest.raises(errors.ConfigError, match="cannot filter on status"):
        bodies.bm25_body("opensearch", "x", size=5, filters=Filters(terms={"status": ["draft"]}), fields=PRODUCTS)


def test_knn_without_a_vector_field_is_an_error() -> None:
    with pytest.raises(errors.ConfigError, match="names none"):
        bodies.knn_body("opensearch", [1.0], k=1, filters=Filters(), num_candidates=5, fields=FieldMap(text={"b": 1}))


def test_the_default_field_map_builds_the_bodies_esbridge_always_sent() -> None:
    body = bodies.bm25_body("opensearch", "solar", size=5, filters=Filters())
    assert body["query"]["bool"]["should"][0]["multi_match"]["fields"] == [
        "title^1.5",
        "aliases^2.5",
        "headings^2",
        "body",
        "metadata_text",
    ]
    assert body["query"]["bool"]["should"][1]["multi_match"]["fields"] == ["path.text^2", "code"]
    assert body["query"]["bool"]["must_not"] == [
        {"terms": {"status": bodies._spellings(["deprecated", "draft", "disabled"])}}
    ]
    assert list(bodies.knn_body("opensearch", [1.0], k=1, filters=Filters(), num_candidates=5)["query"]["knn"]) == [
        "vector"
    ]


def test_stored_fields_come_back_under_esbridges_names() -> None:
    source = {"name": "Red shoe", "body": "A shoe.", "meta": {"updated": "2026-11-01"}, "labels": ["sale"]}
    read = canonical_source(source, PRODUCTS, "p1")
    assert read["doc_id"] == "p1"  # no id field: the engine's _id
    assert read["title"] == "Red shoe"
    assert read["modified_at"] == "2026-11-01"
    assert read["tags"] == ["sale"]
    assert read["name"] == "Red shoe"  # the original stays
    assert canonical_source(source, DEFAULT_FIELD_MAP, "p1") is source


def test_a_keyword_sub_field_role_reads_its_parents_stored_value() -> None:
    # Dynamic mapping makes every string text with a .keyword multi-field; its value is only in the parent.
    dynamic = FieldMap(text={"title": 1.0}, id="doc_id.keyword", tags="tags.keyword", links="links.keyword")
    assert {"doc_id", "tags", "links"} <= set(dynamic.stored_fields(with_texts=False))
    source = {"doc_id": "d9", "tags": ["energy", "sea"], "links": ["d1"], "meta": {"updated": "2026-11-01"}}
    read = canonical_source(source, dynamic, "x9")
    assert (read["doc_id"], read["tags"], read["links"]) == ("d9", ["energy", "sea"], ["d1"])
    assert canonical_source(source, dynamic.model_copy(update={"date": "meta.created"}), "x9")["modified_at"] is None
    objects = {"doc_id": [{"value": "d9"}]}  # an object array is no field value: the engine's _id stands in
    assert canonical_source(objects, dynamic, "x9")["doc_id"] == "x9"


def test_a_hit_without_its_id_field_is_its_own_document_by_its_whole_engine_id() -> None:
    # Collapse keeps one result per doc_id: read from the hit id as a chunk id, repo#12 and repo#13 would be one.
    mapped = PRODUCTS.model_copy(update={"id": "sku"})
    ids = {hit: document_of(hit, canonical_source({"name": "Shoe"}, mapped, hit)) for hit in ("repo#12", "repo#13")}
    assert ids == {"repo#12": "repo#12", "repo#13": "repo#13"}
    assert canonical_source({"sku": "s1"}, mapped, "repo#12")["doc_id"] == "s1"


def test_links_body_finds_documents_by_id_when_no_id_field_is_mapped() -> None:
    linked = PRODUCTS.model_copy(update={"links": "related"})
    body = bodies.links_body(["p1"], size=10, filters=Filters(), fields=linked)
    assert body["query"]["bool"]["should"] == [{"ids": {"values": ["p1"]}}, {"terms": {"related": ["p1"]}}]


def test_off_says_which_features_the_map_turns_off_and_why() -> None:
    off = PRODUCTS.off()
    assert set(off) == {"graph", "lifecycle"}
    assert "links" in off["graph"]
    assert DEFAULT_FIELD_MAP.off() == {}


def test_fields_tables_in_the_settings_file_attach_their_index(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "esbridge.toml"
    path.write_text(
        '[fields.products]\ntext = { name = 2.0, body = 1.0 }\nvector = "embedding"\ndimension = 4\n', encoding="utf-8"
    )
    settings = load_settings(path, index="products")
    assert settings.attached
    assert settings.field_map.text == {"name": 2.0, "body": 1.0}
    other = load_settings(path, index="notes")
    assert not other.attached and other.field_map is DEFAULT_FIELD_MAP


def test_an_invalid_fields_table_is_reported_with_its_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "esbridge.toml"
    path.write_text("[fields.products]\ntext = {}\n", encoding="utf-8")
    with pytest.raises(errors.ConfigError, match=r"fields\.products.*BM25 needs at least one text field"):
        load_settings(path)


def test_an_unknown_key_in_a_fields_table_names_the_nearest_one(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "esbridge.toml"
    path.write_text('[fields.products]\ntext = { name = 2.0 }\nvectr = "embedding"\n', encoding="utf-8")
    with pytest.raises(
        errors.ConfigError, match=r"fields\.products\.vectr: unknown setting; did you mean fields\.products\.vector\?"
    ):
        load_settings(path)


def test_a_blank_model_is_refused_naming_the_key() -> None:
    # It replaced [embedding] model for the index, and the working directory was loaded as the model.
    with pytest.raises(errors.ConfigError, match=r"fields\.products\.model: .*blank"):
        load_settings(index="products", fields={"products": {"text": {"body": 1.0}, "vector": "v", "model": " "}})
