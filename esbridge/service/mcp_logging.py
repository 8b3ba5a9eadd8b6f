"""What ``esbridge mcp`` writes to stderr: one line a log record, the SDK's own chatter only from WARNING up.

The SDK's default (rich logging at INFO, with tracebacks) writes tens of kilobytes for each failed connection to
an engine that is down; an MCP host that does not read the server's stderr then blocks it once the pipe fills.
At ``debug`` the tracebacks are written, as a developer asking for them wants.
"""

from __future__ import annotations

import logging
import sys


class _OneLine(logging.Formatter):
    """A record as one line: level, logger, message, and the exception's type and first line instead of its
    traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            lines = str(exc).strip().splitlines()
            message = f"{message}: {type(exc).__name__}: {lines[0] if lines else '(no message)'}"
        return " ".join(f"{record.levelname} {record.name}: {message}".split())


def configure(level: str = "warning") -> None:
    """Send every log record to stderr as ``_OneLine`` writes it (with its traceback at ``debug``), from ``level``
    up, in place of the handlers the SDK installed."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    if level == "debug":
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(_OneLine())
    root.addHandler(handler)
    root.setLevel(level.upper())
