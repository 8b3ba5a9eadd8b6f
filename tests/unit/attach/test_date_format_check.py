"""An attached index's date format: the field map's against the live mapping's (``check_date_format``)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from esbridge import errors
from esbridge.attach.guard import check_date_format
from esbridge.config.fields import FieldMap
from esbridge.query.engine_dates import DEFAULT_FORMAT


def _mapping(definition: dict[str, Any]) -> dict[str, Any]:
    return {"properties": {"meta": {"properties": {"updated": definition}}, "title": {"type": "text"}}}


def _fields(date_format: str | None = None) -> FieldMap:
    return FieldMap(text={"title": 1.0}, date="meta.updated", date_format=date_format)


def test_a_field_map_without_a_date_format_takes_the_mappings_and_says_how_to_record_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fields = _fields()
    with caplog.at_level(logging.WARNING, logger="esbridge.attach.guard"):
        checked = check_date_format("notes", fields, _mapping({"type": "date", "format": "epoch_second"}))
    assert checked.date_format == "epoch_second"
    assert fields.date_format is None  # the settings given are not changed in place
    (record,) = caplog.records
    message = record.getMessage()
    assert "[fields.notes] names no date_format" in message
    assert 'date_format = "epoch_second"' in message and "esbridge index inspect notes --write" in message


@pytest.mark.parametrize(
    ("given", "definition"),
    [
        ("epoch_second", {"type": "date", "format": "epoch_second"}),
        (None, {"type": "date"}),
        (DEFAULT_FORMAT, {"type": "date"}),
        (None, {"type": "date", "format": DEFAULT_FORMAT}),
        ("dd/MM/yyyy", {"type": "date_nanos", "format": "dd/MM/yyyy"}),
    ],
)
def test_a_field_map_that_agrees_with_the_mapping_is_kept_as_it_is(
    given: str | None, definition: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    fields = _fields(given)
    with caplog.at_level(logging.WARNING, logger="esbridge.attach.guard"):
        assert check_date_format("notes", fields, _mapping(definition)) is fields
    assert caplog.records == []


@pytest.mark.parametrize(
    ("given", "definition", "named"),
    [
        ("epoch_second", {"type": "date"}, DEFAULT_FORMAT),
        ("epoch_second", {"type": "date", "format": "epoch_millis"}, "epoch_millis"),
    ],
)
def test_a_date_format_the_mapping_contradicts_is_refused_naming_both(
    given: str, definition: dict[str, Any], named: str
) -> None:
    with pytest.raises(errors.ConfigError) as refused:
        check_date_format("notes", _fields(given), _mapping(definition))
    message = str(refused.value)
    assert f"[fields.notes] says date_format = {given!r}" in message
    assert f"maps meta.updated with the format {named!r}" in message


def test_no_date_role_or_a_date_role_on_another_kind_of_field_is_left_alone() -> None:
    keyword = _fields("dd/MM/yyyy")
    assert check_date_format("notes", keyword, _mapping({"type": "keyword"})) is keyword
    undated = FieldMap(text={"title": 1.0})
    assert check_date_format("notes", undated, _mapping({"type": "date", "format": "epoch_second"})) is undated
    # A date role missing from the mapping is check_fields' error, not this check's.
    missing = _fields()
    assert check_date_format("notes", missing, {"properties": {}}) is missing
