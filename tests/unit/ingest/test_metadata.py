from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

from esbridge.ingest.metadata import flatten_metadata, metadata_pairs


def test_nested_keys_are_dotted_and_lists_joined() -> None:
    metadata = {"vendor": {"name": "Acme", "tier": 2}, "topics": ["ml", "search"], "draft": False}
    assert flatten_metadata(metadata) == "vendor.name: Acme\nvendor.tier: 2\ntopics: ml, search\ndraft: false"


def test_objects_inside_lists_share_the_dotted_key() -> None:
    metadata = {"authors": [{"name": "Ada", "role": "lead"}, {"name": "Bob"}, {"name": "Ada"}]}
    assert metadata_pairs(metadata) == [("authors.name", "Ada, Bob"), ("authors.role", "lead")]


def test_nested_lists_flatten_and_empty_values_disappear() -> None:
    metadata: dict[str, Any] = {"grid": [[1, 2], [3]], "none": None, "blank": "  ", "empty": [], "deep": {"er": {}}}
    assert flatten_metadata(metadata) == "grid: 1, 2, 3"


def test_whitespace_collapses_so_each_pair_is_one_line() -> None:
    assert flatten_metadata({"note": "first line\n\n  second\tline "}) == "note: first line second line"


def test_scalars_spell_like_json_and_dates_in_iso() -> None:
    metadata = {
        "yes": True,
        "ratio": 0.25,
        "day": date(2024, 5, 1),
        "at": datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc),
    }
    assert metadata_pairs(metadata) == [
        ("yes", "true"),
        ("ratio", "0.25"),
        ("day", "2024-05-01"),
        ("at", "2024-05-01T10:00:00+00:00"),
    ]


def test_sets_are_sorted_for_a_stable_text() -> None:
    assert flatten_metadata({"labels": {"b", "c", "a"}}) == "labels: a, b, c"


def test_excluded_top_level_keys_are_left_out() -> None:
    metadata = {"unresolved_links": ["x"], "source": "wiki"}
    assert flatten_metadata(metadata, exclude={"unresolved_links"}) == "source: wiki"


def test_empty_metadata_is_empty_text() -> None:
    assert flatten_metadata({}) == ""
