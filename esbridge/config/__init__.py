"""Settings: sources, precedence and validation."""

from esbridge.config.connection import AuthSettings, TlsSettings
from esbridge.config.settings import EmbeddingSettings, Settings, load_settings, redact_url

__all__ = ["AuthSettings", "EmbeddingSettings", "Settings", "TlsSettings", "load_settings", "redact_url"]
