"""numpy's BLAS runs on one thread in esbridge's own processes, unless the environment names a thread count."""

from __future__ import annotations

from collections.abc import Iterator

import numpy  # noqa: F401  (its BLAS is the one limited)
import pytest
from click.testing import CliRunner
from threadpoolctl import threadpool_info, threadpool_limits

from esbridge.blas import limit_blas_threads
from esbridge.cli import main


def blas_threads() -> set[int]:
    return {int(library["num_threads"]) for library in threadpool_info() if library["user_api"] == "blas"}


@pytest.fixture
def two_threads() -> Iterator[None]:
    """BLAS on two threads for the test, whatever it was before, and put back afterwards."""
    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == {2}
        yield


@pytest.mark.usefixtures("two_threads")
def test_the_limit_puts_blas_on_one_thread() -> None:
    assert limit_blas_threads({}) is True
    assert blas_threads() == {1}


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_thread_count_in_the_environment_is_kept(variable: str) -> None:
    assert limit_blas_threads({variable: "2"}) is False
    assert blas_threads() == {2}


@pytest.mark.usefixtures("two_threads")
def test_every_command_runs_with_blas_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)

    result = CliRunner().invoke(main, ["cache", "stats", "--json"])

    assert result.exit_code == 0, result.output
    assert blas_threads() == {1}
