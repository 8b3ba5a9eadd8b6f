"""Parsing of ``esbridge search`` options: what a typo turns into."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from esbridge.cli.search import parse_filters, parse_weights


def test_lifecycle_switches_read_the_usual_spellings_and_refuse_others() -> None:
    assert parse_filters(("include_deprecated=yes", "include_draft=false")).include_deprecated is True
    assert parse_filters(("include_draft=0",)).include_draft is False
    with pytest.raises(click.BadParameter, match="include_deprecated"):
        parse_filters(("include_deprecated=maybe",))


def test_an_inverted_date_range_is_refused() -> None:
    with pytest.raises(click.BadParameter, match="later than modified_before") as refused:
        parse_filters(("modified_after=2022-06-30", "modified_before=2022-01-01"))
    # The error belongs to no single field: the message starts with what is wrong, not with an empty name.
    assert refused.value.message.startswith("modified_after (2022-06-30T00:00:00) is later")


def test_weights_parse() -> None:
    assert parse_weights("bm25=1,knn=0.5") == {"bm25": 1.0, "knn": 0.5}
    with pytest.raises(click.BadParameter):
        parse_weights("bm25")


def test_search_pipeline_command_keeps_its_former_name_hidden() -> None:
    from esbridge.cli import main

    listed = CliRunner().invoke(main, ["--help"]).output
    assert "search-pipeline" in listed
    assert "  pipeline " not in listed
    former = CliRunner().invoke(main, ["pipeline", "--help"])
    assert former.exit_code == 0 and "apply" in former.output


@pytest.mark.parametrize(
    ("args", "option", "said"),
    [
        (["--weights", "bm25=x"], "--weights", "weights look like bm25=1,knn=0.5"),
        (["--weights", "bm25=-1"], "--weights", "a weight is a finite number >= 0; got 'bm25=-1'"),
        (["--weights", "knn=nan"], "--weights", "a weight is a finite number >= 0; got 'knn=nan'"),
        (["--weights", "knn=inf"], "--weights", "a weight is a finite number >= 0"),
        (
            ["--weights", "bm52=1"],
            "--weights",
            "weights name no retriever of this pipeline: bm52",
        ),
        (["--weights", "bm25=0,knn=0"], "--weights", "at least one retriever's weight must be above 0"),
        (["--filter", "tags"], "--filter", "filters look like key=value"),
        (["--filter", "modified_after=yesterday"], "--filter", "modified_after"),
        (["--filter", "include_draft=maybe"], "--filter", "include_draft"),
        # Bytes that are not UTF-8 in the command line (a Latin-1 terminal): they failed as a raw traceback.
        (["--filter", "tags=caf\udce9"], "--filter", "'terms.tags[0]' is not valid text"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_its_option(args: list[str], option: str, said: str) -> None:
    from esbridge.cli import main

    result = CliRunner().invoke(main, ["search", "solar", *args, "--engine", "embedded", "--index", "notes"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': {said}" in result.stderr


def test_a_blank_query_is_a_usage_error_naming_the_argument() -> None:
    from esbridge.cli import main

    result = CliRunner().invoke(main, ["search", "   ", "--engine", "embedded", "--index", "notes"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for 'QUERY': query: query must not be blank" in result.stderr


@pytest.mark.parametrize(
    ("args", "option", "said"),
    [
        (["--fusion", "rff"], "--fusion", "unknown fusion method 'rff'; known: adaptive, dbsf, linear, qpp, rrf"),
        (["--fusion", ""], "--fusion", "unknown fusion method ''"),
        (["--category", "hardware"], "--category", "unknown category 'hardware'; categories: none are configured"),
    ],
)
def test_a_choice_that_does_not_exist_is_a_usage_error_naming_its_option(
    args: list[str], option: str, said: str
) -> None:
    from esbridge.cli import main

    result = CliRunner().invoke(main, ["search", "solar", *args, "--engine", "embedded", "--index", "notes"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': {said}" in result.stderr


def test_a_configured_category_is_accepted(tmp_path: Path) -> None:
    from esbridge.cli import main

    config = tmp_path / "esbridge.toml"
    config.write_text('[routing]\nhardware = ["inverter"]\n')
    args = ["search", "solar", "--category", "software", "--config", str(config), "--engine", "embedded"]
    refused = CliRunner().invoke(main, [*args, "--index", "notes"])
    assert refused.exit_code == 2
    assert "unknown category 'software'; categories: hardware" in refused.stderr
    # A known one gets past the check to the engine, which has no such index here.
    known = CliRunner().invoke(main, ["search", "solar", "--category", "hardware", "--config", str(config)])
    assert known.exit_code == 1, known.output
    assert "no such index" in known.stderr
