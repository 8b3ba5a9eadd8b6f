"""The ``esbridge`` command line: one module per command group, registered here."""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import click

from esbridge import __version__
from esbridge.blas import limit_blas_threads
from esbridge.cli import (
    bench,
    cache,
    demo,
    evaluate,
    graph,
    index,
    info,
    ingest,
    mapping,
    mcp,
    search,
    search_pipeline,
    serve,
    transfer,
    tune,
)
from esbridge.cli.output import cannot_write_standard_output
from esbridge.errors import EsbridgeError, EsbridgeWarning

INTERRUPTED_EXIT_CODE = 130
"""128 + SIGINT: what shells report for a command stopped by Ctrl-C."""


class _Group(click.Group):
    """Turns every esbridge error, and output that standard output cannot take, into a one-line ClickException
    (exit code 1, no traceback), Ctrl-C into exit code 130 instead of click's ``Aborted!`` and 1, and
    esbridge's warnings into ``warning:`` lines."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _hold_closed_standard_output()
        return super().main(*args, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _standard_output_errors():  # --help and --version print here
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        limit_blas_threads()
        with _warning_lines(), _standard_output_errors():
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EsbridgeError as exc:
            raise click.ClickException(str(exc)) from exc
        except KeyboardInterrupt as exc:
            raise _interrupted(str(exc)) from None
        except click.Abort as exc:
            # click's prompts turn Ctrl-C into Abort; end of input at a prompt stays an Abort (exit 1).
            if isinstance(exc.__context__, KeyboardInterrupt):
                raise _interrupted() from None
            raise


@contextmanager
def _standard_output_errors() -> Iterator[None]:
    """Output that standard output cannot take (a full disk, a closed descriptor) as one error line, exit 1."""
    try:
        yield
    except OSError as exc:
        # EPIPE (`| head`) is click's to end quietly.
        if exc.errno == errno.EPIPE or not _writing_standard_output(exc):
            raise
        raise cannot_write_standard_output(exc) from exc


def _hold_closed_standard_output() -> None:
    """A command run with standard output closed (``>&-``) fails at its first output as a full disk does, rather
    than printing nothing and exiting 0: Python gives it no ``sys.stdout`` and click's echo then writes nothing.
    Descriptor 1 is held by /dev/null opened read-only, where every write fails (EBADF, as on a closed
    descriptor), so that no file the command opens gets number 1 and the output of a library lands in it."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
        return  # open, though Python did not take it: not this function's to replace
    except OSError:
        pass
    with contextlib.suppress(OSError):
        held = os.open(os.devnull, os.O_RDONLY)
        if held != 1:
            os.dup2(held, 1)
            os.close(held)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (standard output, never closed)


def _writing_standard_output(exc: OSError) -> bool:
    """Whether ``exc`` was raised by ``click.echo`` writing to standard output (a full disk, an I/O error)."""
    innermost = exc.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    if innermost is None:
        return False
    frame = innermost.tb_frame
    return frame.f_code is click.echo.__code__ and not frame.f_locals.get("err")


@contextmanager
def _warning_lines() -> Iterator[None]:
    """Each esbridge warning as one ``warning: ...`` line on stderr, like the commands' own warnings, rather
    than Python's file:line report; other warnings are shown as Python shows them."""
    with warnings.catch_warnings():
        python_shows = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, EsbridgeWarning):
                click.echo(f"warning: {message}", err=True)
            else:
                python_shows(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def _interrupted(kept: str = "") -> click.exceptions.Exit:
    # The newline ends the line the terminal echoed ^C on; ``kept`` is what an interrupted run says it kept.
    click.echo(f"\ninterrupted: {kept}" if kept else "\ninterrupted", err=True)
    return click.exceptions.Exit(INTERRUPTED_EXIT_CODE)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="esbridge")
def main() -> None:
    """Hybrid search (BM25 + kNN) for Elasticsearch and OpenSearch."""


main.add_command(info.info)
main.add_command(mapping.mapping)
main.add_command(index.index)
main.add_command(ingest.ingest_command)
main.add_command(ingest.embed_command)
main.add_command(search.search_command)
main.add_command(graph.graph)
main.add_command(transfer.export_command)
main.add_command(transfer.import_command)
main.add_command(demo.demo_command)
main.add_command(search_pipeline.search_pipeline)
# The command's first name, kept for scripts that use it; "pipeline" alone names the [pipeline] settings.
_former = copy.copy(search_pipeline.search_pipeline)
_former.hidden = True
main.add_command(_former, name="pipeline")
main.add_command(serve.serve_command)
main.add_command(mcp.mcp_command)
main.add_command(evaluate.eval_command)
main.add_command(tune.tune_command)
main.add_command(bench.bench_command)
main.add_command(cache.cache)
