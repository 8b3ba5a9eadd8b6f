"""How esbridge reaches the engine: ``[auth]`` and ``[tls]``."""

from __future__ import annotations

import ssl
import unicodedata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from esbridge.ids import shown_path


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)  # secrets stay out of errors


class AuthSettings(_Section):
    """How esbridge authenticates to the engine. At most one scheme may be configured."""

    username: str | None = None
    password: SecretStr | None = None
    api_key: SecretStr | None = Field(default=None, description="Elasticsearch API key (base64 id:key)")
    cloud_id: str | None = Field(default=None, description="Elastic Cloud deployment id")
    aws_sigv4: bool = Field(default=False, description="Sign requests for Amazon OpenSearch Service")
    aws_region: str | None = None
    aws_service: Literal["es", "aoss"] = "es"

    @model_validator(mode="after")
    def _one_scheme(self) -> AuthSettings:
        if self.password is not None and self.username is None:
            raise ValueError("auth.password is set but auth.username is not")
        if self.username is not None and ":" in self.username:
            # Basic auth sends "user:password"; the server splits at the first colon.
            raise ValueError("auth.username holds ':', which basic auth cannot carry (it separates user and password)")
        control = _control_character(self.username or "")
        if control is not None:
            # RFC 7617 forbids them in a user-id; the name is echoed in engine logs and errors, where one would cut a
            # line or drive a terminal. Named by code point, never as itself.
            raise ValueError(
                f"auth.username holds the control character {control}, which basic auth cannot carry (RFC 7617); "
                "remove it from the username"
            )
        schemes = [
            name
            for name, on in (
                ("basic", self.username is not None),
                ("api_key", self.api_key is not None),
                ("aws_sigv4", self.aws_sigv4),
            )
            if on
        ]
        if len(schemes) > 1:
            raise ValueError(f"configure one authentication scheme, not {' and '.join(schemes)}")
        if self.aws_sigv4 and not self.aws_region:
            raise ValueError("auth.aws_sigv4 needs auth.aws_region")
        return self


def _control_character(text: str) -> str | None:
    """The first control character (C0, DEL, C1) in ``text`` as ``U+000A at position 4``; None when it holds none."""
    for position, char in enumerate(text):
        if unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X} at position {position}"
    return None


class TlsSettings(_Section):
    """TLS for https engine URLs. Verification is on unless explicitly turned off."""

    verify: bool = True
    ca_certs: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None

    @field_validator("ca_certs", "client_cert", "client_key")
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @model_validator(mode="after")
    def _files_exist(self) -> TlsSettings:
        for name in ("ca_certs", "client_cert", "client_key"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"tls.{name} file not found: {shown_path(path)}")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("tls.client_key is set but tls.client_cert is not")
        # Loaded here so that an unusable file is a settings error naming its key; the async clients would
        # raise a bare ssl.SSLError on first use, or ask for a passphrase on the terminal.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.ca_certs is not None:
            try:
                context.load_verify_locations(cafile=self.ca_certs)
            except (ssl.SSLError, OSError) as exc:
                raise ValueError(
                    f"tls.ca_certs {shown_path(self.ca_certs)} holds no usable CA certificate (PEM): {exc}"
                ) from None
        if self.client_cert is not None:
            try:
                context.load_cert_chain(self.client_cert, self.client_key, password=_no_passphrase)
            except _EncryptedKey:
                raise ValueError(
                    f"tls.client_key of {shown_path(self.client_cert)} is encrypted; give an unencrypted key"
                ) from None
            except (ssl.SSLError, OSError) as exc:
                key = f" with tls.client_key {shown_path(self.client_key)}" if self.client_key else " (holding its key)"
                raise ValueError(
                    f"tls.client_cert {shown_path(self.client_cert)}{key} is not a usable PEM certificate and "
                    f"matching key: {exc}"
                ) from None
        return self


class _EncryptedKey(Exception):
    pass


def _no_passphrase() -> str:
    raise _EncryptedKey
