"""A settings file given with ``--config``, and the files it names, are named escaped in errors and warnings: a line
break, an escape sequence or a right-to-left override in a name neither splits the line nor drives the terminal
nor shows the name reversed, and bytes that are not UTF-8 are shown as ``\\xNN``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esbridge.attach.settings_file import write_field_map
from esbridge.cli import main
from esbridge.config.fields import FieldMap
from esbridge.config.files import replace_text
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ConfigError

NAMES = [
    pytest.param("conf\nerror: forged\x1b[2J\u202e", "conf\\u000aerror: forged\\u001b[2J\\u202e", id="controls"),
    pytest.param(os.fsdecode(b"conf\xff"), "conf\\xff", id="not-utf-8"),
]


def stats(tmp_path: Path, config: Path, **env: str) -> Result:
    environment = {"ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"), **env}
    return CliRunner(env=environment).invoke(main, ["cache", "stats", "--config", str(config)])


def escaped(text: str, raw: str, shown: str) -> str:
    assert shown in text
    assert raw not in text and "\x1b" not in text and "\u202e" not in text
    return text


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_config_file_that_does_not_exist_or_cannot_be_read_is_named_escaped(
    tmp_path: Path, name: str, shown: str
) -> None:
    config = tmp_path / f"{name}.toml"
    result = stats(tmp_path, config)
    assert result.exit_code == 1, result.output
    assert escaped(result.stderr, name, shown) == f"Error: config file not found: {tmp_path}/{shown}.toml\n"
    config.write_text("[search\n", encoding="utf-8")
    result = stats(tmp_path, config)
    assert result.exit_code == 1, result.output
    assert escaped(result.stderr, name, shown).startswith(f"Error: cannot read config file {tmp_path}/{shown}.toml: ")


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_an_invalid_setting_names_the_config_file_escaped(tmp_path: Path, name: str, shown: str) -> None:
    config = tmp_path / f"{name}.toml"
    config.write_text("[search]\nsize = 'many'\n", encoding="utf-8")
    result = stats(tmp_path, config)
    assert result.exit_code == 1, result.output
    assert escaped(result.stderr, name, shown).startswith(
        f"Error: invalid settings (config file {tmp_path}/{shown}.toml)"
    )


@pytest.mark.parametrize(("name", "shown"), NAMES)
@pytest.mark.parametrize(
    ("variable", "said"),
    [
        ("ESBRIDGE_TLS__CA_CERTS", "tls.ca_certs file not found"),
        ("ESBRIDGE_SERVICE__API_KEYS_FILE", "service.api_keys_file not found"),
    ],
)
def test_files_the_settings_name_are_named_escaped_when_missing(
    tmp_path: Path, name: str, shown: str, variable: str, said: str
) -> None:
    config = tmp_path / "esbridge.toml"
    config.touch()
    result = stats(tmp_path, config, **{variable: str(tmp_path / name)})
    assert result.exit_code == 1, result.output
    assert f"{said}: {tmp_path}/{shown}" in escaped(result.stderr, name, shown)


@pytest.mark.filterwarnings("always::esbridge.errors.SettingsWarning")  # the command prints it
@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_config_file_with_secrets_others_may_read_is_named_escaped_in_the_warning(
    tmp_path: Path, name: str, shown: str
) -> None:
    config = tmp_path / f"{name}.toml"
    config.write_text("[auth]\nusername = 'elastic'\npassword = 'changeme'\n", encoding="utf-8")
    config.chmod(0o644)
    result = stats(tmp_path, config)
    assert result.exit_code == 0, result.output
    warning = " ".join(escaped(result.stderr, name, shown).split())
    assert f"config file {tmp_path}/{shown}.toml holds" in warning
    assert f"restrict it with: chmod 600 '{tmp_path}/{shown}.toml'" in warning


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_settings_file_that_cannot_be_written_is_named_escaped(tmp_path: Path, name: str, shown: str) -> None:
    with pytest.raises(ConfigError) as refused:
        replace_text(tmp_path / name / "esbridge.toml", "[search]\n")
    message = escaped(str(refused.value), name, shown)
    assert (
        message
        == f"cannot write config file {tmp_path}/{shown}/esbridge.toml: No such file or directory; it is unchanged"
    )


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_cache_stats_names_the_cache_escaped(tmp_path: Path, name: str, shown: str) -> None:
    config = tmp_path / "esbridge.toml"
    config.touch()
    result = stats(tmp_path, config, ESBRIDGE_EMBEDDING__CACHE_DIR=str(tmp_path / name))
    assert result.exit_code == 0, result.output
    assert escaped(result.stdout, name, shown).startswith(f"{tmp_path}/{shown}/")


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_field_map_not_written_names_the_settings_file_escaped(tmp_path: Path, name: str, shown: str) -> None:
    config = tmp_path / f"{name}.toml"
    config.write_text("[fields.products]\ntext = { name = 1.0 }\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        write_field_map(config, "products", FieldMap(text={"name": 1.0}))
    message = escaped(str(refused.value), name, shown)
    assert message.startswith(f"{tmp_path}/{shown}.toml already has a [fields.products] table; nothing was written")
    config.write_text("[fields\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        write_field_map(config, "products", FieldMap(text={"name": 1.0}))
    assert escaped(str(refused.value), name, shown).startswith(f"cannot read config file {tmp_path}/{shown}.toml: ")


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_index_inspect_names_the_settings_file_it_wrote_escaped(tmp_path: Path, name: str, shown: str) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        engine.create_index("products", {"mappings": {"properties": {"name": {"type": "text"}}}})
    finally:
        engine.close()
    config = tmp_path / f"{name}.toml"
    args = ["index", "inspect", "products", "--write", "--config", str(config)]
    result = CliRunner(env={"ESBRIDGE_DATA_DIR": str(tmp_path / "data")}).invoke(main, args)
    assert result.exit_code == 0, result.output
    last = escaped(result.output, name, shown).splitlines()[-1]
    assert last == f"wrote [fields.products] to {tmp_path}/{shown}.toml; esbridge now searches products read-only"
