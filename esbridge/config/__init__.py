"""Settings: sources, precedence and validation."""

from esbridge.config.connection import AuthSettings, TlsSettings
from esbridge.config.engine_url import redact_url
from esbridge.config.settings import EmbeddingSettings, Settings, load_settings

__all__ = ["AuthSettings", "EmbeddingSettings", "Settings", "TlsSettings", "load_settings", "redact_url"]
