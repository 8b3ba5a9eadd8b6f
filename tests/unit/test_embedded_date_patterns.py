"""Custom Java date patterns in a date field's ``format`` on the embedded engine: the values each takes and the
moment it names, as OpenSearch 3.6 reads them (tests/integration/test_embedded_parity.py checks the same values
and bounds against the clusters), and the patterns it refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.dates import date_span, format_parts, parse_date

MAY_1 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
AT_10_20_30 = MAY_1 + 37_230_000


@pytest.mark.parametrize(
    ("form", "value", "millis"),
    [
        ("yyyy-MM-dd", "2024-05-01", MAY_1),
        ("yyyy-MM-dd", "+20240-05-01", 576_555_926_400_000),  # more digits than letters after a sign
        ("yyyy-MM-dd", "0001-05-01", -62_125_228_800_000),
        ("uuuu-MM-dd", "-0100-05-01", -65_312_524_800_000),
        ("uuuu-MM-dd", "0000-05-01", -62_156_764_800_000),
        ("dd/MM/yyyy", "01/05/2024", MAY_1),
        ("d/M/y", "1/5/2024", MAY_1),
        ("d/M/y", "001/5/2024", MAY_1),
        ("d/M/y", "1/5/24", -61_399_382_400_000),  # the year 24
        ("yy-MM-dd", "24-05-01", MAY_1),
        ("yy-MM-dd", "99-05-01", 4_081_276_800_000),  # 2099: two digits are 2000 to 2099
        ("yyyyMMdd", "20240501", MAY_1),
        ("yyyy", 2024, 1_704_067_200_000),
        ("yyyy-MM-dd HH:mm:ss", "2024-05-01 10:20:30", AT_10_20_30),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-01T10:20:30.123+02:00", AT_10_20_30 - 7_200_000 + 123),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-01T10:20:30.123Z", AT_10_20_30 + 123),
        ("yyyy-MM-dd HH:mm:ssZ", "2024-05-01 10:20:30+0200", AT_10_20_30 - 7_200_000),
        ("yyyy-MM-dd HH:mm:ssX", "2024-05-01 10:20:30+0230", AT_10_20_30 - 9_000_000),
        ("yyyy-MM-dd HH:mm:ssX", "2024-05-01 10:20:30+02", AT_10_20_30 - 7_200_000),
        ("yyyy-MM-dd'at'HH", "2024-05-01at10", MAY_1 + 36_000_000),
        ("yyyy-MM-dd''HH", "2024-05-01'10", MAY_1 + 36_000_000),
        ("'It''s' yyyy-MM-dd", "It's 2024-05-01", MAY_1),
        ("yyyy/MM/dd||epoch_millis", "1700000000000", 1_700_000_000_000),
        ("EEE, dd MMM yyyy HH:mm:ss Z", "Wed, 01 May 2024 10:20:30 +0200", AT_10_20_30 - 7_200_000),
        ("EEE, dd MMM yyyy HH:mm:ss Z", "Mon, 01 May 2024 10:20:30 +0000", AT_10_20_30),  # the day is not checked
        ("E dd MMM yyyy||EE dd MMM yyyy", "Wed 01 May 2024", MAY_1),
        ("dd MMM yyyy", "02 Sep 2023", 1_693_612_800_000),
        ("ddMMMyyyy", "01May2024", MAY_1),
        ("yyyy-MM-dd['T'HH:mm]", "2024-05-01", MAY_1),
        ("yyyy-MM-dd['T'HH:mm]", "2024-05-01T10:20", AT_10_20_30 - 30_000),
        ("yyyy-MM-dd['T'HH[:mm[:ss]]]", "2024-05-01T10", MAY_1 + 36_000_000),
        ("[EEE, ]dd MMM yyyy", "01 May 2024", MAY_1),
        ("yyyy-MM-dd'T'HH:mm[XXX]", "2024-05-01T10:20+02:00", AT_10_20_30 - 7_230_000),
        ("yyyy-MM-dd||uuuu-MM-dd", "0000-05-01", -62_156_764_800_000),  # no year of era 0: the next part reads it
    ],
)
def test_a_pattern_reads_what_opensearch_reads(form: str, value: object, millis: int) -> None:
    assert parse_date(value, form) == millis


@pytest.mark.parametrize(
    ("form", "value"),
    [
        ("yyyy-MM-dd", "2024-5-1"),  # two letters, two digits
        ("yyyy-MM-dd", "+2024-05-01"),  # a sign only before more digits than letters
        ("yyyy-MM-dd", "20240-05-01"),
        ("yyyy-MM-dd", "0000-05-01"),  # no year 0 of the era
        ("yyyy-MM-dd", "-0100-05-01"),
        ("yyyy-MM-dd", "2024-02-30"),
        ("yyyy-MM-dd", "2024-13-01"),
        ("yyyy-MM-dd", " 2024-05-01"),
        ("dd/MM/yyyy", "29/02/2023"),
        ("yyyy-MM-dd HH:mm:ss", "2024-05-01 24:00:00"),
        ("yyyy-MM-dd HH:mm:ss", "2024-05-01 10:20"),
        ("yyyyMMdd", "202405011"),
        ("yy-MM-dd", "2024-05-01"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-01T10:20:30.12+02:00"),  # three letters S, three digits
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-01T10:20:30.123+0200"),
        ("yyyy-MM-dd HH:mm:ssZ", "2024-05-01 10:20:30Z"),
        ("yyyy/MM/dd||epoch_millis", "2024-05-01"),
        ("EEE, dd MMM yyyy", "wed, 01 May 2024"),  # names are read case-sensitively
        ("EEE, dd MMM yyyy", "Wed, 01 may 2024"),
        ("EEE, dd MMM yyyy", "WED, 01 MAY 2024"),
        ("EEE, dd MMM yyyy", "Wednesday, 01 May 2024"),
        ("EEE, dd MMM yyyy", "Sat, 02 Sept 2023"),
        ("EEE, dd MMM yyyy", "Wed, 1 May 2024"),
        ("EEE, dd MMM yyyy", "Wed, 30 Feb 2024"),
        ("yyyy-MM-dd['T'HH:mm]", "2024-05-01T10"),  # a section is read whole or not at all
        ("yyyy-MM-dd['T'HH:mm]", "2024-05-01T"),
        ("yyyy-MM-dd['T'HH:mm]", "2024-05-01T10:20:30"),
        ("[EEE, ]dd MMM yyyy", ", 01 May 2024"),
    ],
)
def test_a_pattern_refuses_what_opensearch_refuses(form: str, value: str) -> None:
    with pytest.raises(ValueError, match=r"failed to parse date field|no such date|no year of era"):
        parse_date(value, form)


@pytest.mark.parametrize(
    ("bound", "form", "span"),
    [
        ("01/05/2024", "dd/MM/yyyy", (MAY_1, MAY_1 + 86_400_000 - 1)),
        ("2024-05-01 10:20", "yyyy-MM-dd HH:mm", (AT_10_20_30 - 30_000, AT_10_20_30 + 29_999)),
        ("2024-05-01 10:20:30.5", "yyyy-MM-dd HH:mm:ss.S", (AT_10_20_30 + 500, AT_10_20_30 + 500)),
        ("2024-05", "yyyy-MM", (MAY_1, MAY_1 + 86_400_000 - 1)),  # its first day, as with uuuu-MM
        ("May 2024", "MMM yyyy", (MAY_1, MAY_1 + 86_400_000 - 1)),
        ("Wed, 01 May 2024", "EEE, dd MMM yyyy", (MAY_1, MAY_1 + 86_400_000 - 1)),
        ("2024-05-01", "yyyy-MM-dd['T'HH:mm]", (MAY_1, MAY_1 + 86_400_000 - 1)),
        ("2024-05-01T10:20", "yyyy-MM-dd['T'HH:mm]", (AT_10_20_30 - 30_000, AT_10_20_30 + 29_999)),
    ],
)
def test_a_pattern_bound_stands_for_the_span_it_names(bound: str, form: str, span: tuple[int, int]) -> None:
    assert date_span(bound, form) == span


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ("dd MMMM yyyy", r"the letters \[MMMM\] are not read: OpenSearch reads it as the short name"),
        ("EEEE dd/MM/yyyy", r"the letters \[EEEE\] are not read: .*Elasticsearch as the full one \(January, Tuesday\)"),
        ("dd MMMMM yyyy", r"the letters \[MMMMM\] are not read"),
        ("dd LLL yyyy", r"the letters \[LLL\] are not read"),
        ("yyyy-MM-dd'T'HH:mm:ss a", r"the letters \[a\] are not read"),
        ("yyyy-DDD", r"the letters \[DDD\] are not read"),
        ("yyyy-MM-dd[ HH:mm", "an optional section is not closed"),
        ("yyyy-MM-dd]", r"\[\]\] closes no optional section"),
        ("yyyy[-MM]-dd", r"the leading ones of year, month, day.*\(it names year, day\)"),
        ("yyyy-MM-dd[ HH][:mm]", r"\(it names year, month, day, minute\)"),
        ("yyyy[MM]", r"\[MM\] begins an optional section right after a number"),
        ("EEE yyyy-MM-dd EEE", r"\[EEE\] names a field a second time"),
        ("yyyy-MM-dd{", r"\[\{\] is not read"),
        ("yyyy-dd", "its fields must be the leading ones of year, month, day"),
        ("HH:mm", "its fields must be the leading ones"),
        ("yyyyM", r"\[M\] varies in width right after a number"),
        ("yyyy-MM-dd yyyy", r"\[yyyy\] names a field a second time"),
        ("yyyy-MM-dd'T", "a quote is not closed"),
    ],
)
def test_a_pattern_outside_the_subset_is_refused_naming_it(form: str, words: str) -> None:
    with pytest.raises(ValueError, match=rf"format \[{re.escape(form)}\] is not supported.*{words}"):
        format_parts(form)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def test_a_field_in_a_custom_pattern_takes_its_values_and_answers_terms_and_ranges(engine: EmbeddedEngine) -> None:
    # Before, the index was refused at creation: "format [dd/MM/yyyy] is not supported by the embedded engine".
    engine.create_index("days", {"mappings": {"properties": {"d": {"type": "date", "format": "dd/MM/yyyy"}}}})
    values = {"may": "01/05/2024", "june": "01/06/2024", "short": "1/5/2024", "iso": "2024-05-01"}
    written = engine.bulk("days", [BulkAction("index", key, {"d": value}) for key, value in values.items()])
    engine.refresh("days")
    assert sorted(written.succeeded) == ["june", "may"]

    def ids(query: dict[str, object]) -> set[str]:
        return {hit.id for hit in engine.search("days", {"query": query}).hits}

    assert ids({"term": {"d": "01/05/2024"}}) == {"may"}
    assert ids({"range": {"d": {"gt": "01/05/2024"}}}) == {"june"}
    assert ids({"range": {"d": {"gte": "2024-05-02", "format": "yyyy-MM-dd"}}}) == {"june"}


def test_a_field_in_the_rfc_1123_form_takes_english_short_names_and_answers_ranges(engine: EmbeddedEngine) -> None:
    # Before, the index was refused at creation: "the letters [EEE] are not read".
    form = "EEE, dd MMM yyyy HH:mm:ss Z"
    engine.create_index("mail", {"mappings": {"properties": {"d": {"type": "date", "format": form}}}})
    values = {"may": "Wed, 01 May 2024 10:20:30 +0200", "june": "Sat, 01 Jun 2024 00:00:00 +0000"}
    values |= {"lower": "wed, 01 May 2024 10:20:30 +0200", "gmt": "Wed, 01 May 2024 10:20:30 GMT"}
    written = engine.bulk("mail", [BulkAction("index", key, {"d": value}) for key, value in values.items()])
    engine.refresh("mail")
    assert sorted(written.succeeded) == ["june", "may"]

    def ids(query: dict[str, object]) -> set[str]:
        return {hit.id for hit in engine.search("mail", {"query": query}).hits}

    assert ids({"range": {"d": {"lte": "Wed, 01 May 2024 08:20:30 +0000"}}}) == {"may"}
    assert ids({"range": {"d": {"gt": "Fri, 31 May 2024 23:59:59 +0000"}}}) == {"june"}
