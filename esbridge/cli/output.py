"""Standard output that cannot take a command's results (a full disk, a closed descriptor): one error line."""

from __future__ import annotations

import contextlib
import errno
import os
import sys

import click


def cannot_write_standard_output(exc: OSError) -> click.ClickException:
    """The error to raise for ``exc``, once standard output points at /dev/null, so that the flush at exit cannot
    fail again (a second report, and exit code 120 instead of 1)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return click.ClickException(f"cannot write to standard output: {exc.strerror or exc}")


def require_standard_output() -> None:
    """Refuse at once, before any work, a command whose standard output is its whole conversation (``mcp``) when
    that output cannot be written (closed, ``>&-``, or opened read-only): an empty write fails as every write
    would."""
    try:
        os.write(sys.stdout.fileno(), b"")
    except (OSError, ValueError, AttributeError) as exc:
        problem = exc if isinstance(exc, OSError) else OSError(errno.EBADF, os.strerror(errno.EBADF))
        raise cannot_write_standard_output(problem) from exc
