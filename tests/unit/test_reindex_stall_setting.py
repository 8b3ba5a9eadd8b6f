"""``reindex_stall_timeout_s``: how long a server-side reindex may go without progress before it is cancelled."""

from __future__ import annotations

import pytest

from esbridge.config import load_settings
from esbridge.errors import ConfigError


def test_an_hour_by_default_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().reindex_stall_timeout_s == 3600
    monkeypatch.setenv("ESBRIDGE_REINDEX_STALL_TIMEOUT_S", "120")
    assert load_settings().reindex_stall_timeout_s == 120


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "greater than 0"),
        ("-5", "greater than 0"),
        ("86401", "less than or equal to 86400"),
        ("an hour", "valid number"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_setting_and_its_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, problem: str
) -> None:
    monkeypatch.setenv("ESBRIDGE_REINDEX_STALL_TIMEOUT_S", value)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    message = str(refused.value)
    assert message.startswith("invalid settings:\n  reindex_stall_timeout_s: ")
    assert problem in message
    assert message.endswith("(environment variable ESBRIDGE_REINDEX_STALL_TIMEOUT_S)")
