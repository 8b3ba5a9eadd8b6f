"""A basic-auth username holding a control character (a line break, NUL, ESC, DEL) is refused by the settings,
naming the character by code point and never printing the password, whether the username is given as a setting or
in the URL."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge.config.settings import load_settings
from esbridge.errors import ConfigError

PASSWORD = "s3cret-Passw0rd"


@pytest.mark.parametrize(
    ("username", "shown"),
    [("ops\nadmin", "U+000A at position 3"), ("\x00ops", "U+0000 at position 0"),
     ("o\x1b[2Jps", "U+001B at position 1"), ("ops\x7f", "U+007F at position 3"), ("ops\x85", "U+0085 at position 3")],
)  # fmt: skip
def test_a_username_with_a_control_character_is_refused_naming_it_without_the_password(
    username: str, shown: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(auth={"username": username, "password": PASSWORD})
    message = str(refused.value)
    assert f"auth.username holds the control character {shown}, which basic auth cannot carry (RFC 7617)" in message
    assert PASSWORD not in message and username not in message


def test_a_username_with_a_control_character_in_the_url_is_refused_without_the_password() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(url=f"https://ops%0Aadmin:{PASSWORD}@es.example:9243")
    message = str(refused.value)
    assert "auth.username holds the control character U+000A at position 3" in message
    assert PASSWORD not in message


@pytest.mark.parametrize("auth", [{"username": "ops admin", "password": PASSWORD}, {"username": "dévops"}])
def test_a_username_with_spaces_or_letters_beyond_ascii_is_kept(auth: dict[str, Any]) -> None:
    assert load_settings(auth=auth).auth.username == auth["username"]
