"""How esbridge reaches the engine: ``[auth]`` and ``[tls]``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class TlsSettings(_Section):
    """TLS for https engine URLs. Verification is on unless explicitly turned off."""

    verify: bool = True
    ca_certs: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None

    @model_validator(mode="after")
    def _files_exist(self) -> TlsSettings:
        for name in ("ca_certs", "client_cert", "client_key"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"tls.{name} file not found: {path}")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("tls.client_key is set but tls.client_cert is not")
        return self
