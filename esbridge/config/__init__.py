"""Settings: sources, precedence and validation."""

from esbridge.config.settings import (
    AuthSettings,
    EmbeddingSettings,
    Settings,
    TlsSettings,
    load_settings,
    redact_url,
)

__all__ = ["AuthSettings", "EmbeddingSettings", "Settings", "TlsSettings", "load_settings", "redact_url"]
