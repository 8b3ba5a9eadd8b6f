from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

import pytest

from esbridge.config import load_settings
from esbridge.errors import ConfigError


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_source() -> None:
    settings = load_settings()
    assert settings.url is None
    assert settings.engine == "auto"
    assert settings.index == "esbridge"
    assert settings.tls.verify is True
    assert (settings.embedding.model, settings.embedding.backend, settings.embedding.precision) == (
        "BAAI/bge-small-en-v1.5",
        "onnx",
        "int8",
    )


def test_precedence_flags_over_env_over_file_over_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(
        Path("esbridge.toml"),
        'url = "http://file:9200"\nindex = "from-file"\ntimeout_s = 7\n[embedding]\nbatch_size = 8\n',
    )
    monkeypatch.setenv("ESBRIDGE_URL", "http://env:9200")
    monkeypatch.setenv("ESBRIDGE_TIMEOUT_S", "9")

    settings = load_settings(url="http://flag:9200")

    assert settings.url == "http://flag:9200"  # flag beats env and file
    assert settings.timeout_s == 9  # env beats file
    assert settings.index == "from-file"  # file beats default
    assert settings.embedding.batch_size == 8  # nested section from the file
    assert settings.retries == 3  # default


def test_none_flags_do_not_override_lower_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_INDEX", "from-env")
    assert load_settings(index=None).index == "from-env"


def test_nested_env_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_AUTH__USERNAME", "reader")
    monkeypatch.setenv("ESBRIDGE_AUTH__PASSWORD", "s3cret")
    monkeypatch.setenv("ESBRIDGE_TLS__VERIFY", "false")
    settings = load_settings()
    assert settings.auth.username == "reader"
    assert settings.auth.password is not None
    assert settings.auth.password.get_secret_value() == "s3cret"
    assert settings.tls.verify is False


def test_config_file_from_env_variable_and_argument(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_env = write_toml(tmp_path / "env.toml", 'index = "by-env"\n')
    by_arg = write_toml(tmp_path / "arg.toml", 'index = "by-arg"\n')
    monkeypatch.setenv("ESBRIDGE_CONFIG", str(by_env))
    assert load_settings().index == "by-env"
    assert load_settings(by_arg).index == "by-arg"


def test_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "missing.toml")


def test_unknown_key_in_file_is_named(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "typo.toml", 'urll = "http://x:9200"\n')
    with pytest.raises(ConfigError, match="urll: unknown setting"):
        load_settings(path)


def test_malformed_toml_is_a_config_error(tmp_path: Path) -> None:
    path = write_toml(tmp_path / "broken.toml", "url = \n")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_settings(path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"url": "ftp://host"}, "url must look like"),
        ({"index": "Bad Name"}, "not a valid index name"),
        ({"index": "_hidden"}, "not a valid index name"),
        ({"engine": "solr"}, "engine"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"auth": {"password": "x"}}, "auth.password is set but auth.username is not"),
        ({"auth": {"username": "team:ops", "password": "x"}}, "auth.username holds ':', which basic auth cannot carry"),
        ({"auth": {"username": "u", "api_key": "k"}}, "one authentication scheme, not basic and api_key"),
        ({"auth": {"aws_sigv4": True}}, "needs auth.aws_region"),
        ({"engine": "elasticsearch", "auth": {"aws_sigv4": True, "aws_region": "eu-west-1"}}, "not Elasticsearch"),
        ({"engine": "opensearch", "auth": {"cloud_id": "x:y"}}, "not OpenSearch"),
        ({"tls": {"ca_certs": "/nonexistent/ca.pem"}}, "tls.ca_certs file not found"),
    ],
)
def test_invalid_settings_are_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(**overrides)


@pytest.mark.parametrize("name", ["weight", "prior_weight", "min_link_weight", "rescore_weight"])
def test_an_infinite_graph_setting_is_refused_when_the_file_is_read(tmp_path: Path, name: str) -> None:
    # TOML has inf; these once passed the settings and crashed every search with graph expansion on.
    path = write_toml(tmp_path / "graph.toml", f"[pipeline.graph]\nenabled = true\n{name} = inf\n")
    with pytest.raises(ConfigError, match=rf"pipeline\.graph\.{name}: .*finite"):
        load_settings(path)


def test_credentials_in_url_move_into_auth() -> None:
    settings = load_settings(url="https://elastic:p%40ss@es.example:9243")
    assert settings.url == "https://es.example:9243"
    assert settings.auth.username == "elastic"
    assert settings.auth.password is not None
    assert settings.auth.password.get_secret_value() == "p@ss"
    assert "p@ss" not in settings.display_url


def test_a_password_in_the_environment_and_one_in_the_files_url_are_refused_not_one_silently_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_toml(tmp_path / "esbridge.toml", 'url = "http://bob:oldpassword@127.0.0.1:9200"\n')
    path.chmod(0o600)  # a file holding a password that others may read is warned about
    monkeypatch.setenv("ESBRIDGE_AUTH__PASSWORD", "newpassword")
    with pytest.raises(ConfigError, match="credentials are given both in the URL and in auth settings") as refused:
        load_settings(path)
    assert "oldpassword" not in str(refused.value)
    assert "newpassword" not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:99999", "http://127.0.0.1:abc", "http://u:topsecret@127.0.0.1:99999"]
)
def test_a_bad_port_is_a_url_error_that_keeps_secrets(url: str) -> None:
    with pytest.raises(ConfigError, match=r"url has no valid port") as refused:
        load_settings(url=url)
    assert "topsecret" not in str(refused.value)


@pytest.mark.parametrize("url", ["http://[::1:9200", "http://u:topsecret@[::1:9200"])
def test_an_unclosed_ipv6_bracket_is_a_url_error_naming_the_file(tmp_path: Path, url: str) -> None:
    # urllib's error was raised before the url was read as a setting: "settings: Invalid IPv6 URL", no file named.
    config = tmp_path / "esbridge.toml"
    config.write_text(f'url = "{url}"\n', encoding="utf-8")
    config.chmod(0o600)
    with pytest.raises(
        ConfigError, match=rf"invalid settings \(config file {re.escape(str(config))}\):\n  url: "
    ) as refused:
        load_settings(config_file=config)
    assert "topsecret" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://admin:top#secret@127.0.0.1:9200",
        "http://admin:top/secret@127.0.0.1:9200",
        "http://admin:top?secret@127.0.0.1:9200",
        "http://admin:9200#topsecret@127.0.0.1:9200",  # reads as host "admin", port 9200
        "http://admin:9200/topsecret@127.0.0.1:9200",
    ],
)
def test_a_password_with_an_unencoded_delimiter_is_refused_without_showing_it(url: str) -> None:
    # '/', '?' and '#' end the host part, so urllib never sees these credentials as credentials.
    with pytest.raises(ConfigError, match=r"url: .*percent-encode") as refused:
        load_settings(url=url)
    assert "secret" not in str(refused.value)


def test_a_url_without_its_scheme_is_refused_without_showing_its_password() -> None:
    with pytest.raises(ConfigError, match=r"url must look like http\(s\)://host:port, got 'host:9200'") as refused:
        load_settings(url="bob:topsecret@host:9200")
    assert "topsecret" not in str(refused.value)


def test_the_url_scheme_is_case_insensitive() -> None:
    assert load_settings(url="HTTPS://es.example:9243").url == "HTTPS://es.example:9243"


def test_secrets_are_never_printed() -> None:
    settings = load_settings(url="https://u:topsecret@h:9200", embedding={"batch_size": 4})
    keyed = load_settings(auth={"api_key": "apikeysecret"})
    for text in (repr(settings), str(settings), str(settings.redacted()), settings.model_dump_json()):
        assert "topsecret" not in text
    for text in (repr(keyed), str(keyed.redacted()), keyed.model_dump_json()):
        assert "apikeysecret" not in text
    assert settings.redacted()["auth"]["password"] == "**********"


@pytest.mark.parametrize(
    "overrides",
    [
        {"auth": {"username": "u", "password": "topsecret", "api_key": "apikeysecret"}},
        {"url": "http://u:topsecret@127.0.0.1:9200", "auth": {"api_key": "apikeysecret"}},
        {"service": {"api_keys": ["apikeysecret", " "]}},
    ],
)
def test_the_traceback_of_a_settings_error_holds_no_secret(overrides: dict[str, Any]) -> None:
    # What an uncaught error or logging.exception prints: the ConfigError and the pydantic error it comes from.
    with pytest.raises(ConfigError) as refused:
        load_settings(**overrides)
    printed = "".join(traceback.format_exception(refused.value))
    assert "ValidationError" in printed
    assert "topsecret" not in printed
    assert "apikeysecret" not in printed


def test_an_undecodable_nested_env_variable_is_named_not_the_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_PIPELINE__WEIGHTS", "bm25=2,knn=1")
    with pytest.raises(ConfigError) as raised:
        load_settings(url="http://127.0.0.1:9200")
    message = str(raised.value)
    assert message.startswith("invalid settings: environment variable ESBRIDGE_PIPELINE__WEIGHTS: not valid JSON")
    assert "esbridge.toml" not in message
    assert "EnvSettingsSource" not in message


def test_an_undecodable_section_env_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(Path("esbridge.toml"), 'index = "from-file"\n')
    monkeypatch.setenv("ESBRIDGE_AUTH", '{"password": "s3cret"')
    with pytest.raises(ConfigError, match="environment variable ESBRIDGE_AUTH: not valid JSON") as raised:
        load_settings()
    assert "s3cret" not in str(raised.value)
    assert "esbridge.toml" not in str(raised.value)


def test_each_invalid_value_is_blamed_on_its_own_source(monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(Path("esbridge.toml"), 'index = "from-file"\nretries = "many"\n')
    monkeypatch.setenv("ESBRIDGE_TIMEOUT_S", "abc")
    monkeypatch.setenv("ESBRIDGE_FUSION_MODE", "sideways")
    with pytest.raises(ConfigError) as raised:
        load_settings(index="Bad Name")
    lines = str(raised.value).splitlines()
    assert lines[0] == "invalid settings:"
    by_setting = {line.strip().split(":")[0]: line for line in lines[1:]}
    assert by_setting["timeout_s"].endswith("(environment variable ESBRIDGE_TIMEOUT_S)")
    assert by_setting["pipeline.mode"].endswith("(environment variable ESBRIDGE_FUSION_MODE)")
    assert by_setting["retries"].endswith("(config file esbridge.toml)")
    assert "esbridge.toml" not in by_setting["index"] and "environment" not in by_setting["index"]


def test_an_env_variable_overriding_a_valid_file_value_is_blamed_not_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(Path("esbridge.toml"), "timeout_s = 5\n")
    monkeypatch.setenv("ESBRIDGE_TIMEOUT_S", "abc")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert "esbridge.toml" not in str(raised.value)
    assert "timeout_s: Input should be a valid number" in str(raised.value)
    assert "(environment variable ESBRIDGE_TIMEOUT_S)" in str(raised.value)


def test_errors_only_in_the_file_name_the_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(Path("esbridge.toml"), 'timeout_s = "slow"\n')
    monkeypatch.setenv("ESBRIDGE_RETRIES", "2")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(raised.value) == (
        "invalid settings (config file esbridge.toml):\n"
        "  timeout_s: Input should be a valid number, unable to parse string as a number"
    )


def test_numeric_fusion_params_from_env_variables_are_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    from esbridge.query.fusion import get_fusion

    monkeypatch.setenv("ESBRIDGE_PIPELINE__FUSION", "rrf")
    monkeypatch.setenv("ESBRIDGE_PIPELINE__FUSION_PARAMS__K", "30")
    monkeypatch.setenv("ESBRIDGE_PIPELINE__FUSION_PARAMS__NORMALIZATION", "min_max")
    monkeypatch.setenv("ESBRIDGE_PIPELINE__FUSION_PARAMS__SCALE", "0.5")
    pipeline = load_settings().pipeline
    assert pipeline.fusion_params == {"k": 30, "normalization": "min_max", "scale": 0.5}
    result = get_fusion("rrf")({"bm25": {"a": 2.0, "b": 1.0}}, k=pipeline.fusion_params["k"])
    assert result.scores == pytest.approx({"a": 1 / 31, "b": 1 / 32})


def test_a_url_and_a_cloud_id_are_refused_naming_where_each_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both once passed, and the cloud was reached while every message named the URL.
    write_toml(Path("esbridge.toml"), '[auth]\ncloud_id = "deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg=="\n')
    monkeypatch.setenv("ESBRIDGE_URL", "http://127.0.0.1:9201")
    with pytest.raises(ConfigError) as from_env:
        load_settings()
    assert "url and auth.cloud_id both say which engine to reach" in str(from_env.value)
    assert "url from environment variable ESBRIDGE_URL" in str(from_env.value)
    assert "auth.cloud_id from config file esbridge.toml" in str(from_env.value)
    with pytest.raises(ConfigError, match="url from a command-line option"):
        load_settings(url="http://127.0.0.1:9200")


def test_engine_embedded_with_a_url_says_where_the_url_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESBRIDGE_URL", "http://127.0.0.1:9200")
    with pytest.raises(ConfigError) as refused:
        load_settings(engine="embedded")
    assert "engine 'embedded' takes no url" in str(refused.value)
    assert "url from environment variable ESBRIDGE_URL" in str(refused.value)
    assert "engine from a command-line option" in str(refused.value)


@pytest.mark.parametrize("model", ["", "   "])
def test_a_blank_embedding_model_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    # An empty ESBRIDGE_EMBEDDING__MODEL (a compose file's unset variable) once named the working directory,
    # whose files were loaded as the model's.
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__MODEL", model)
    with pytest.raises(ConfigError, match=r"embedding\.model: .*blank.*environment variable ESBRIDGE_EMBEDDING__MODEL"):
        load_settings()


def test_files_named_under_the_home_directory_are_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # "~/certs/ca.pem" was looked for as written ("file not found"), where the data, model and cache folders expand ~.
    from tests.support.certificates import self_signed

    (tmp_path / "certs").mkdir()
    self_signed(tmp_path / "certs")
    (tmp_path / "keys").write_text("k1\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = load_settings(
        tls={"ca_certs": "~/certs/cert.pem", "client_cert": "~/certs/cert.pem", "client_key": "~/certs/key.pem"},
        service={"api_keys_file": "~/keys"},
    )
    assert settings.tls.ca_certs == settings.tls.client_cert == tmp_path / "certs" / "cert.pem"
    assert settings.tls.client_key == tmp_path / "certs" / "key.pem"
    assert settings.service.api_keys_file == tmp_path / "keys"


def test_a_table_from_the_environment_replaces_the_keys_it_names_and_a_list_the_whole_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_toml(Path("esbridge.toml"), '[pipeline]\nretrievers = ["bm25", "knn"]\nweights = {bm25 = 3, knn = 1}\n')
    monkeypatch.setenv("ESBRIDGE_PIPELINE__WEIGHTS", '{"knn": 2}')
    monkeypatch.setenv("ESBRIDGE_PIPELINE__RETRIEVERS", '["bm25"]')
    pipeline = load_settings().pipeline
    assert (pipeline.weights, pipeline.retrievers) == ({"bm25": 3.0, "knn": 2.0}, ["bm25"])
    assert load_settings(pipeline={"weights": {"bm25": 5}}).pipeline.weights == {"bm25": 5.0, "knn": 2.0}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("tiers = [[7, 0.5]]", "multiplier must be a finite number >= 1"),
        ("tiers = [[7, 1.1], [30, 1.2]]", "must not grow with age"),
        ("tiers = [[0, 1.1]]", "max_age must be positive"),
        ("tiers = [[7, 1.2], [7, 1.1]]", "two recency tiers"),
        ("tiers = [[inf, 1.2]]", "max_age"),
        ('mode = "half_life"\nhalf_life_days = 1e-12', "half_life must be positive"),
        ('mode = "half_life"\nhalf_life_days = 1e300', "half_life_days"),
        ('mode = "half_life"\nhalf_life_days = inf', "half_life_days"),
        ('mode = "half_life"\nboost = inf', "boost"),
    ],
)
def test_a_recency_rule_a_search_could_not_use_is_refused_when_the_file_is_read(
    tmp_path: Path, lines: str, message: str
) -> None:
    # These once passed the settings and crashed every search with a traceback.
    path = write_toml(tmp_path / "recency.toml", f"[pipeline.recency]\n{lines}\n")
    with pytest.raises(ConfigError, match=rf"pipeline\.recency.*{message}"):
        load_settings(path)


def test_int8_on_torch_is_refused_naming_where_each_setting_came_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # torch runs fp32 weights; an int8 there used to be ignored without a word.
    settings_file = tmp_path / "esbridge.toml"
    settings_file.write_text('[embedding]\nprecision = "int8"\n', encoding="utf-8")
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__BACKEND", "torch")
    with pytest.raises(ConfigError) as refused:
        load_settings(settings_file)
    said = str(refused.value)
    assert "embedding.precision 'int8' is for backend 'onnx'" in said
    assert "embedding.backend from environment variable ESBRIDGE_EMBEDDING__BACKEND" in said
    assert f"embedding.precision from config file {settings_file}" in said

    settings_file.write_text('[pipeline.rerank]\nprecision = "int8"\n', encoding="utf-8")
    monkeypatch.delenv("ESBRIDGE_EMBEDDING__BACKEND")
    with pytest.raises(ConfigError, match=r"pipeline\.rerank\.precision 'int8' is for backend 'onnx'"):
        load_settings(settings_file)

    torch = load_settings(embedding={"backend": "torch"})  # its default int8 is the onnx backend's, not asked for
    assert (torch.embedding.backend, torch.embedding.precision) == ("torch", "int8")
    settings_file.write_text('[pipeline.rerank]\nbackend = "onnx"\nprecision = "int8"\n', encoding="utf-8")
    assert load_settings(settings_file).pipeline.rerank.precision == "int8"
