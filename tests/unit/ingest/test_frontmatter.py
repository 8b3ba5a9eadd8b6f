from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from esbridge.ingest.frontmatter import (
    MAX_FRONTMATTER_DEPTH,
    MAX_FRONTMATTER_VALUES,
    MAX_METADATA_BYTES,
    interpret_frontmatter,
    load_frontmatter,
    parse_datetime,
)

UTC = timezone.utc


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1595003088839, datetime(2020, 7, 17, 16, 24, 48, 839000, tzinfo=UTC)),  # Dendron: epoch ms
        ("1595003088839", datetime(2020, 7, 17, 16, 24, 48, 839000, tzinfo=UTC)),
        (1595003088, datetime(2020, 7, 17, 16, 24, 48, tzinfo=UTC)),  # epoch seconds
        ("2024-03-01", datetime(2024, 3, 1, tzinfo=UTC)),
        ("2024-03-01T10:30:00Z", datetime(2024, 3, 1, 10, 30, tzinfo=UTC)),
        ("2024-03-01 12:30:00+02:00", datetime(2024, 3, 1, 10, 30, tzinfo=UTC)),
        (date(2024, 3, 1), datetime(2024, 3, 1, tzinfo=UTC)),
        (datetime(2024, 3, 1, 10, 30), datetime(2024, 3, 1, 10, 30, tzinfo=UTC)),  # naive: taken as UTC
        (datetime(2024, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=2))), datetime(2024, 3, 1, 10, 30, tzinfo=UTC)),
    ],
)
def test_dates_become_aware_utc_datetimes(value: object, expected: datetime) -> None:
    parsed = parse_datetime(value)
    assert parsed == expected
    assert parsed is not None and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        "last tuesday",
        True,
        None,
        [2024],
        float("nan"),
        # Valid where written, but out of datetime's range once moved to UTC.
        "9999-12-31T23:59:59-05:00",
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))),
        "0001-01-01T00:00:00+05:00",
    ],
)
def test_what_is_not_a_date_gives_none(value: object) -> None:
    assert parse_datetime(value) is None


def test_yaml_dates_and_epochs_are_read_from_frontmatter() -> None:
    data, warnings = load_frontmatter("created: 2021-05-04\nupdated: 1636510026672\n")
    front, meaning_warnings = interpret_frontmatter(data)
    assert warnings == meaning_warnings == []
    assert front.created_at == datetime(2021, 5, 4, tzinfo=UTC)
    assert front.modified_at == datetime(2021, 11, 10, 2, 7, 6, 672000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("title: [unclosed\n", "not valid YAML at line"),
        ("title: a\n  bad: indent\n", "not valid YAML"),
        ("- just\n- a list\n", "not a mapping"),
        ("just a sentence\n", "not a mapping"),
    ],
)
def test_broken_frontmatter_is_a_warning_not_an_error(raw: str, reason: str) -> None:
    data, warnings = load_frontmatter(raw)
    assert data == {}
    assert len(warnings) == 1
    assert reason in warnings[0]


def test_an_impossible_date_costs_only_its_own_key() -> None:
    data, warnings = load_frontmatter("title: Kept\ntags: [a]\ncreated: 2021-13-40\nupdated: 2021-02-03 25:61:00\n")
    assert warnings == []
    front, meaning_warnings = interpret_frontmatter(data)
    assert (front.title, front.tags, front.created_at, front.modified_at) == ("Kept", ("a",), None, None)
    assert meaning_warnings == [
        "frontmatter 'created' is not a date: '2021-13-40'",
        "frontmatter 'updated' is not a date: '2021-02-03 25:61:00'",
    ]
    assert front.metadata == {"created": "2021-13-40", "updated": "2021-02-03 25:61:00"}


def test_empty_frontmatter_is_fine() -> None:
    assert load_frontmatter("") == ({}, [])


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ("[a, b/c]", ("a", "b/c")),
        ("a b  c", ("a", "b", "c")),
        ("a, b,c", ("a", "b", "c")),
        ("'#a #b'", ("a", "b")),
        ("\n  - one\n  - 2\n", ("one", "2")),
        ("", ()),
    ],
)
def test_tags_are_a_list_or_a_space_or_comma_string(tags: str, expected: tuple[str, ...]) -> None:
    data, _ = load_frontmatter(f"tags: {tags}\n")
    front, _ = interpret_frontmatter(data)
    assert front.tags == expected


def test_a_list_inside_tags_or_aliases_gives_its_items_not_its_python_text() -> None:
    data, _ = load_frontmatter("tags: [[a, b], c]\naliases: [[Other Note], [[Deeper]], 'Smith, John']\n")
    front, warnings = interpret_frontmatter(data)
    assert warnings == []
    assert (front.tags, front.aliases) == (("a", "b", "c"), ("Other Note", "Deeper", "Smith, John"))
    assert front.metadata == {}


def test_a_mapping_inside_tags_is_no_tag_but_a_warning_and_kept_in_metadata() -> None:
    data, _ = load_frontmatter("tags: [a, {c: d}]\naliases: {k: v}\n")
    front, warnings = interpret_frontmatter(data)
    assert (front.tags, front.aliases) == (("a",), ())
    assert warnings == [
        "frontmatter 'tags' holds a mapping, which is no tag; kept in metadata",
        "frontmatter 'aliases' holds a mapping, which is no alias; kept in metadata",
    ]
    assert front.metadata == {"tags": ["a", {"c": "d"}], "aliases": {"k": "v"}}


def test_known_keys_are_fields_and_the_rest_is_json_safe_metadata() -> None:
    data, _ = load_frontmatter(
        "title: Deploy guide\n"
        "aliases: [Deploying, Rollout]\n"
        "status: draft\n"
        "type: runbook\n"
        "category: ops\n"
        "modified_at: 2024-01-02T03:04:05Z\n"
        "id: abc\n"
        "date: 2020-07-25\n"
        "config: {nested: {when: 2020-01-01}}\n"
    )
    front, warnings = interpret_frontmatter(data)
    assert warnings == []
    assert front.title == "Deploy guide"
    assert front.aliases == ("Deploying", "Rollout")
    assert (front.status, front.entity_type, front.category) == ("draft", "runbook", "ops")
    assert front.modified_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    # `date` is only a fallback for created_at and stays in metadata
    assert front.created_at == datetime(2020, 7, 25, tzinfo=UTC)
    assert front.metadata == {"id": "abc", "date": "2020-07-25", "config": {"nested": {"when": "2020-01-01"}}}


def test_entity_type_key_wins_over_type_and_alias_string_is_one_alias() -> None:
    data, _ = load_frontmatter("entity_type: person\ntype: other\nalias: Ada Lovelace\n")
    front, _ = interpret_frontmatter(data)
    assert front.entity_type == "person"
    assert front.aliases == ("Ada Lovelace",)
    assert front.metadata == {"type": "other"}


def test_values_that_make_no_sense_are_warned_about() -> None:
    data, _ = load_frontmatter("created: someday\nstatus: [a, b]\ntitle: 2024\n")
    front, warnings = interpret_frontmatter(data)
    assert front.created_at is None
    assert front.status is None
    assert front.title == "2024"
    assert any("'created' is not a date" in warning for warning in warnings)
    assert any("'status' should be a single value" in warning for warning in warnings)
    assert front.metadata == {"created": "someday", "status": ["a", "b"]}


def billion_laughs(levels: int) -> str:
    lines = ['l0: &l0 "lol"']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_aliases_that_expand_without_bound_are_refused_before_they_are_built() -> None:
    raw = billion_laughs(7)
    assert len(raw) < 1024
    data, warnings = load_frontmatter(raw)
    assert data == {}
    [warning] = warnings
    assert f"more than {MAX_FRONTMATTER_VALUES} values" in warning and "alias" in warning


def test_an_anchor_inside_itself_is_refused() -> None:
    data, warnings = load_frontmatter("title: T\nloop: &a [x, *a]\n")
    assert data == {}
    assert warnings and "refers to itself" in warnings[0]


def test_a_few_aliases_are_read_as_yaml_means_them() -> None:
    data, warnings = load_frontmatter(billion_laughs(2) + "title: Small\n")
    assert warnings == []
    assert data["l2"] == [["lol"] * 9] * 9


def test_a_key_given_twice_is_a_warning_naming_it_and_its_lines_not_a_silent_loss() -> None:
    raw = "title: Draft\ntags: [a]\ntitle: Final\nmeta:\n  x: 1\n  x: 2\n1: one\n'1': two\n"
    data, warnings = load_frontmatter(raw)
    assert data["title"] == "Final" and data["meta"] == {"x": 2}
    assert warnings == [
        f"frontmatter key {key!r} is given twice (lines {first} and {later}); the value on the later line is used, "
        "the earlier one is not indexed"
        for key, first, later in [("title", 2, 4), ("1", 8, 9), ("x", 6, 7)]
    ]


def test_keys_python_takes_for_one_stay_apart_as_the_text_written() -> None:
    """``1``, ``1.0`` and ``true`` are one dict key to Python, and ``null`` became "None": each value replaced
    another without a warning, since the text written differs."""
    raw = "1: one\ntrue: yes-bool\n1.0: one-point-oh\nTrue: capital\nnull: nothing\nNone: word\n2024-01-01: day\n"
    data, warnings = load_frontmatter(raw)
    assert warnings == []
    assert data == {
        "1": "one",
        "true": "yes-bool",
        "1.0": "one-point-oh",
        "True": "capital",
        "null": "nothing",
        "None": "word",
        "2024-01-01": "day",
    }
    nested, _ = load_frontmatter("meta:\n  1: a\n  true: b\n")
    assert nested["meta"] == {"1": "a", "true": "b"}
    complex_key, why = load_frontmatter("? [a, b]\n: v\n")
    assert complex_key == {} and "found unhashable key" in why[0]


def test_keys_a_merge_or_an_alias_repeats_are_no_repeated_keys() -> None:
    data, warnings = load_frontmatter("base: &b {a: 1, c: 0}\nother:\n  <<: *b\n  c: 2\nagain: *b\n")
    assert warnings == []
    assert data["other"] == {"a": 1, "c": 2} and data["again"] == {"a": 1, "c": 0}


def test_metadata_over_the_cap_is_dropped_and_the_fields_kept() -> None:
    data, warnings = load_frontmatter(f"title: Big\ntags: [a]\nblob: {'x' * MAX_METADATA_BYTES}\nsmall: 1\n")
    assert warnings == []
    front, meaning_warnings = interpret_frontmatter(data)
    assert (front.title, front.tags, front.metadata) == ("Big", ("a",), {})
    [warning] = meaning_warnings
    assert "64.0 KiB" in warning and "metadata" in warning and "dropped" in warning


def test_a_date_past_the_end_of_time_in_utc_costs_only_its_own_key() -> None:
    data, _ = load_frontmatter("title: Kept\ncreated: 9999-12-31T23:59:59-05:00\n")
    front, meaning_warnings = interpret_frontmatter(data)
    assert (front.title, front.created_at) == ("Kept", None)
    assert len(meaning_warnings) == 1 and "'created' is not a date" in meaning_warnings[0]


@pytest.mark.parametrize(
    ("raw", "created", "modified"),
    [
        ("created: 2024\nupdated: 2024-05\n", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)),
        ('created: "1999"\nmodified: "2021-11"\n', datetime(1999, 1, 1, tzinfo=UTC), datetime(2021, 11, 1, tzinfo=UTC)),
    ],
)
def test_a_year_or_a_month_is_its_first_day_not_an_epoch_in_1970(
    raw: str, created: datetime, modified: datetime
) -> None:
    data, warnings = load_frontmatter(raw)
    front, meaning_warnings = interpret_frontmatter(data)
    assert warnings == meaning_warnings == []
    assert (front.created_at, front.modified_at) == (created, modified)
    assert front.metadata == {}


@pytest.mark.parametrize("value", ["2024-13", "2024-00", "0000"])
def test_a_month_or_year_that_does_not_exist_is_not_a_date(value: str) -> None:
    assert parse_datetime(value) is None


@pytest.mark.parametrize(("key", "depth"), [("other", MAX_FRONTMATTER_DEPTH + 5), ("tags", 500), ("config", 900)])
def test_a_frontmatter_nested_too_deep_is_ignored_not_a_crash_of_the_whole_run(key: str, depth: int) -> None:
    data, warnings = load_frontmatter(f"title: T\n{key}: " + "[" * depth + "a" + "]" * depth + "\n")
    assert data == {}
    assert warnings == [f"frontmatter nests values more than {MAX_FRONTMATTER_DEPTH} levels deep; ignored"]
    front, meaning_warnings = interpret_frontmatter(data)
    assert (front.title, meaning_warnings) == (None, [])


def test_a_frontmatter_nested_within_the_limit_is_read() -> None:
    depth = MAX_FRONTMATTER_DEPTH - 2
    data, warnings = load_frontmatter("other: " + "[" * depth + "a" + "]" * depth + "\n")
    assert warnings == []
    front, _ = interpret_frontmatter(data)
    assert "other" in front.metadata


def test_yes_no_on_off_stay_the_text_written_and_only_true_false_are_booleans() -> None:
    """Frontmatter booleans as YAML 1.2 (Obsidian) reads them, not as PyYAML's YAML 1.1 resolver does."""
    raw = "status: off\ndraft: Yes\npublish: NO\nsync: On\nflags: [on, off, yes, no]\nyes: key\nok: true\nbad: FALSE\n"
    data, warnings = load_frontmatter(raw)
    assert warnings == []
    assert data == {
        "status": "off",
        "draft": "Yes",
        "publish": "NO",
        "sync": "On",
        "flags": ["on", "off", "yes", "no"],
        "yes": "key",
        "ok": True,
        "bad": False,
    }
    front, _ = interpret_frontmatter(data)
    assert front.status == "off"
    assert front.metadata["draft"] == "Yes" and front.metadata["ok"] is True


def test_a_number_is_read_only_where_yaml_1_1_and_1_2_agree_and_otherwise_the_text_is_kept() -> None:
    """PyYAML's YAML 1.1 reads a time as base 60, a leading zero as octal and 1_000 as 1000; YAML 1.2 reads 09 as 9."""
    raw = (
        "time: 12:30:45\nduration: 1:30\nmode: 0755\nzip: 01234\ntitle: 09\nbig: 1_000\nbits: 0b101\n"
        "sci: 1e5\noctal: 0o17\ncount: 42\nneg: -7\nhex: 0x1F\nratio: 0.5\nsmall: 1.5e-3\nzero: 0\n"
    )
    data, warnings = load_frontmatter(raw)
    assert warnings == []
    assert data == {
        "time": "12:30:45",
        "duration": "1:30",
        "mode": "0755",
        "zip": "01234",
        "title": "09",
        "big": "1_000",
        "bits": "0b101",
        "sci": "1e5",
        "octal": "0o17",
        "count": 42,
        "neg": -7,
        "hex": 31,
        "ratio": 0.5,
        "small": 0.0015,
        "zero": 0,
    }
    front, _ = interpret_frontmatter(data)
    assert front.title == "09"
    assert front.metadata["time"] == "12:30:45" and front.metadata["mode"] == "0755"


def test_a_value_tagged_as_a_boolean_that_is_none_stays_its_text() -> None:
    # `!!bool maybe` raised KeyError out of the YAML loader, which no caller caught: the whole ingest stopped.
    data, warnings = load_frontmatter("draft: !!bool maybe\ntitle: Pump\n")
    assert (data, warnings) == ({"draft": "maybe", "title": "Pump"}, [])
