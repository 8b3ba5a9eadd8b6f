"""``ESBRIDGE_*`` variables no setting reads are named in a warning, with the nearest known name, instead of
being dropped without a word; the variables of the scripts, CI and tests are not."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.config.environment import unknown_variables
from esbridge.config.settings import ALSO_READ, Settings
from esbridge.errors import ConfigError, SettingsWarning

REPO = Path(__file__).resolve().parents[2]


def warnings_of_load() -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_settings()
    return [str(warning.message) for warning in caught]


@pytest.mark.parametrize(
    ("variable", "nearest"),
    [
        ("ESBRIDGE_TOP_N_MAX", "ESBRIDGE_PIPELINE__TOP_N_MAX"),
        ("ESBRIDGE_PIPELINE_TOP_N_MAX", "ESBRIDGE_PIPELINE__TOP_N_MAX"),
        ("ESBRIDGE_PIPELINEX__TOP_N_MAX", "ESBRIDGE_PIPELINE__TOP_N_MAX"),
        ("ESBRIDGE_URLL", "ESBRIDGE_URL"),
        ("esbridge_timeout", "ESBRIDGE_TIMEOUT_S"),
        ("ESBRIDGE_API_KEY", "ESBRIDGE_API_KEYS"),
    ],
)
def test_an_unknown_variable_is_named_with_the_nearest_known_one(
    monkeypatch: pytest.MonkeyPatch, variable: str, nearest: str
) -> None:
    monkeypatch.setenv(variable, "10")
    with pytest.warns(SettingsWarning) as caught:
        settings = load_settings()
    assert [str(warning.message) for warning in caught] == [
        f"environment variable {variable} is not a setting and is ignored; did you mean {nearest}?"
    ]
    assert (settings.pipeline.top_n_max, settings.url, settings.timeout_s) == (50, None, 10.0)  # no effect


def test_every_unknown_variable_is_named_and_one_like_no_setting_gets_no_guess(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_ZZZZ", "1")
    monkeypatch.setenv("ESBRIDGE_INDX", "notes")
    assert warnings_of_load() == [
        "environment variable ESBRIDGE_INDX is not a setting and is ignored; did you mean ESBRIDGE_INDEX?",
        "environment variable ESBRIDGE_ZZZZ is not a setting and is ignored",
    ]


def test_settings_short_names_and_the_config_file_variable_are_known(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "esbridge.toml"
    config.write_text('index = "notes"\n', encoding="utf-8")
    for variable, value in {
        "ESBRIDGE_CONFIG": str(config),
        "ESBRIDGE_URL": "http://127.0.0.1:9200",
        "esbridge_timeout_s": "3",
        "ESBRIDGE_PIPELINE__TOP_N_MAX": "60",
        "ESBRIDGE_PIPELINE__GRAPH__ENABLED": "true",
        "ESBRIDGE_PIPELINE__WEIGHTS__BM25": "2",
        "ESBRIDGE_PIPELINE__FUSION_PARAMS__K": "30",
        "ESBRIDGE_FUSION_MODE": "client",
        "ESBRIDGE_API_KEYS": "a-key",
        "ESBRIDGE_TEST_OPENSEARCH_URL": "http://127.0.0.1:9200",
        "ESBRIDGE_OPENSEARCH_PORT": "9200",
        "ESBRIDGE_ELASTICSEARCH_ANALYSIS": "none",
        "ESBRIDGE_ENGINES_DIR": str(tmp_path),
        "ESBRIDGE_CHECK_ENGINES": "0",
    }.items():
        monkeypatch.setenv(variable, value)
    assert warnings_of_load() == []
    assert load_settings().pipeline.top_n_max == 60


def test_the_model_folder_and_weight_hash_variables_the_docs_name_are_known(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ESBRIDGE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("ESBRIDGE_WEIGHT_HASHES", str(tmp_path / "weight-hashes.json"))
    assert warnings_of_load() == []


def variables_named_in(*folders: str) -> set[str]:
    found: set[str] = set()
    for folder in folders:
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix not in (".jar", ".class"):
                found.update(
                    re.findall(r"ESBRIDGE_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8", errors="ignore"))
                )
    return found


def test_no_variable_the_scripts_ci_or_containers_read_is_reported() -> None:
    named = variables_named_in("scripts", ".ci", "docker")
    assert {"ESBRIDGE_ENGINES_DIR", "ESBRIDGE_OPENSEARCH_PORT", "ESBRIDGE_CHECK_ENGINES"} <= named
    environ = dict.fromkeys(named, "x")
    assert unknown_variables(environ, Settings, also_read=ALSO_READ) == {}


def test_an_unknown_key_under_a_section_stays_an_error_and_gets_the_nearest_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ESBRIDGE_PIPELINE__TOP_N_MAXX", "10")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(raised.value).splitlines()[1].strip() == (
        "pipeline.top_n_maxx: unknown setting; did you mean pipeline.top_n_max? "
        "(environment variable ESBRIDGE_PIPELINE__TOP_N_MAXX)"
    )


@pytest.mark.filterwarnings("always::esbridge.errors.SettingsWarning")
def test_the_command_line_prints_the_warning_as_one_line_and_goes_on() -> None:
    result = CliRunner().invoke(main, ["index", "list", "--engine", "embedded"], env={"ESBRIDGE_TOP_N_MAX": "10"})
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: environment variable ESBRIDGE_TOP_N_MAX is not a setting and is ignored; "
        "did you mean ESBRIDGE_PIPELINE__TOP_N_MAX?\n"
    )


def test_variables_under_a_table_of_settings_are_read_and_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # [routing] and [fields.<index>] are tables whose keys the user names: pydantic-settings reads them.
    monkeypatch.setenv("ESBRIDGE_ROUTING__SOLAR", '["panel"]')
    monkeypatch.setenv("ESBRIDGE_FIELDS__NOTES__TEXT", '{"body": 1}')
    monkeypatch.setenv("ESBRIDGE_FIELDS__NOTES__VECTOR", "embedding")
    assert warnings_of_load() == []
    settings = load_settings()
    assert settings.routing == {"solar": ["panel"]}
    assert (settings.fields["notes"].text, settings.fields["notes"].vector) == ({"body": 1.0}, "embedding")
