"""Epoch numbers are read by one rule, ``calendar.from_epoch``, in JSONL records and Markdown frontmatter alike."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from esbridge.ingest.calendar import EPOCH_MILLISECONDS_ABOVE, epoch_number, from_epoch
from esbridge.ingest.frontmatter import interpret_frontmatter, parse_datetime
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.model import Document

UTC = timezone.utc
# (number, the moment it stands for): seconds up to 2e10, milliseconds above it, negative numbers alike
EPOCHS = [
    (0, datetime(1970, 1, 1, tzinfo=UTC)),
    (1714557600, datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    (1714557600.5, datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC)),
    (1595003088839, datetime(2020, 7, 17, 16, 24, 48, 839000, tzinfo=UTC)),
    (EPOCH_MILLISECONDS_ABOVE, datetime(2603, 10, 11, 11, 33, 20, tzinfo=UTC)),
    (EPOCH_MILLISECONDS_ABOVE + 1, datetime(1970, 8, 20, 11, 33, 20, 1000, tzinfo=UTC)),
    (50_000_000_000, datetime(1971, 8, 2, 16, 53, 20, tzinfo=UTC)),  # seconds in Markdown before: year 3554
    (-25_000_000_000, datetime(1969, 3, 17, 15, 33, 20, tzinfo=UTC)),
]


@pytest.mark.parametrize(("number", "moment"), EPOCHS)
def test_one_rule_tells_epoch_seconds_from_milliseconds(number: float, moment: datetime) -> None:
    assert from_epoch(number) == moment


@pytest.mark.parametrize(("number", "moment"), EPOCHS)
def test_jsonl_and_frontmatter_read_an_epoch_number_alike(tmp_path: Path, number: float, moment: datetime) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"id": "r", "created_at": number, "modified_at": str(number)}) + "\n", "utf-8")
    (record,) = read_jsonl(path)
    assert isinstance(record, Document)
    assert record.created_at == record.modified_at == moment
    assert parse_datetime(number) == parse_datetime(str(number)) == moment


@pytest.mark.parametrize("number", [float("nan"), float("inf"), 1e20, -1e20, 253_402_300_800_000])
def test_a_number_past_the_years_1_to_9999_is_no_date(number: float) -> None:
    assert from_epoch(number) is None
    assert parse_datetime(number) is None


@pytest.mark.parametrize(
    ("value", "number"), [("12", 12), (" -5 ", -5), ("+7", 7), ("1.5", 1.5), (3, 3), (True, None), ("1e3", None)]
)
def test_epoch_numbers_are_numbers_or_digit_texts(value: object, number: float | None) -> None:
    assert epoch_number(value) == number


@pytest.mark.parametrize("value", [20240501, "20240501"])
def test_an_epoch_number_that_is_also_a_yyyymmdd_date_is_read_as_epoch_seconds_with_a_warning(
    tmp_path: Path, value: object
) -> None:
    seconds = datetime(1970, 8, 23, 6, 21, 41, tzinfo=UTC)
    reading = (
        "is read as epoch seconds, 1970-08-23T06:21:41+00:00; as YYYYMMDD it would be 2024-05-01: write "
        "2024-05-01 if that is what it means"
    )
    front, warnings = interpret_frontmatter({"created": value, "updated": 1714557600})
    assert front.created_at == seconds
    assert warnings == [f"frontmatter 'created' {value!r} {reading}"]
    path = tmp_path / "records.jsonl"
    path.write_text(
        json.dumps({"id": "r", "text": "t", "created_at": value, "modified_at": 1714557600}) + "\n", "utf-8"
    )
    (record,) = read_jsonl(path)
    assert isinstance(record, Document)
    assert record.created_at == seconds
    assert record.warnings == (f"field 'created_at' {value!r} {reading}",)


@pytest.mark.parametrize("value", [20241301, 20240231, 1714557600, 99999999, 2024050.0])
def test_an_epoch_number_that_is_no_yyyymmdd_date_gets_no_warning(value: object) -> None:
    assert interpret_frontmatter({"created": value})[1] == []
