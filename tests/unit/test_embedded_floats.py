"""The float32 copies beside a graph: rows read back as written, zeros where the file has none."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from esbridge.engines.embedded import floats
from esbridge.engines.embedded.floats import FloatCopies


def test_rows_read_back_as_written_in_the_order_asked_and_zeros_past_the_end_or_between(tmp_path: Path) -> None:
    copies = FloatCopies(tmp_path / "vectors" / "1.v.f32", 3)
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    copies.write([2, 3, 7, 8], vectors)  # two runs, with a hole between (rows 4-6) and none before row 2
    assert copies.path.stat().st_size == 9 * 3 * 4
    found = copies.read([8, 2, 5, 0, 3, 7, 40])
    expected = np.zeros((7, 3), dtype=np.float32)
    expected[[0, 1, 4, 5]] = vectors[[3, 0, 1, 2]]
    np.testing.assert_array_equal(found, expected)


def test_a_missing_empty_or_cut_short_file_gives_zeros(tmp_path: Path) -> None:
    copies = FloatCopies(tmp_path / "1.v.f32", 2)
    np.testing.assert_array_equal(copies.read([0, 1]), np.zeros((2, 2), dtype=np.float32))
    copies.path.write_bytes(b"")
    np.testing.assert_array_equal(copies.read([0]), np.zeros((1, 2), dtype=np.float32))
    copies.write([0, 1], np.array([[1, 2], [3, 4]], dtype=np.float32))
    with copies.path.open("r+b") as file:
        file.truncate(2 * 4 + 4)  # row 1 cut in half: not a whole row, so not read
    np.testing.assert_array_equal(copies.read([1, 0]), np.array([[0, 0], [1, 2]], dtype=np.float32))
    assert copies.read([]).shape == (0, 2)


ADVISES = hasattr(os, "posix_fadvise")
needs_advice = pytest.mark.skipif(not ADVISES, reason="os.posix_fadvise is missing here (macOS)")


def asked_ahead(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets the kernel is asked to fetch ahead (the call still goes through)."""
    offsets: list[int] = []
    real = os.posix_fadvise

    def recording(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        offsets.append(offset)
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", recording)
    return offsets


def waiting_on(monkeypatch: pytest.MonkeyPatch, slow: set[int]) -> None:
    """Reads take no time, but the reads at these positions (from 0, in the order made) take a second."""
    clock = iter(range(10**6))
    made: list[int] = []

    def now() -> int:
        tick = next(clock)
        if tick % 2 == 0:  # before a read
            made.append(tick // 2)
            return 0
        return 10**9 if made[-1] in slow else 0

    monkeypatch.setattr(floats, "time", SimpleNamespace(perf_counter_ns=now))  # floats' clock alone


@needs_advice
def test_after_a_read_that_waited_the_rows_still_to_read_are_fetched_ahead_and_read_back_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies = FloatCopies(tmp_path / "1.v.f32", 4)
    vectors = np.arange(40, dtype=np.float32).reshape(10, 4) - 7
    copies.write(list(range(10)), vectors)
    rows = [1, 3, 4, 8, 12]
    expected = np.vstack([vectors[[1, 3, 4, 8]], np.zeros((1, 4), dtype=np.float32)])
    offsets = asked_ahead(monkeypatch)
    waiting_on(monkeypatch, set())
    np.testing.assert_array_equal(copies.read(rows), expected)
    assert offsets == []  # none waited: nothing asked ahead
    waiting_on(monkeypatch, {2})
    np.testing.assert_array_equal(copies.read(rows), expected)
    assert offsets == [8 * 16, 12 * 16]  # once, after the third read, for each later row (past the end too)
    offsets.clear()
    waiting_on(monkeypatch, {4})
    np.testing.assert_array_equal(copies.read(rows), expected)
    assert offsets == []  # the last read waited: nothing left to ask for


def test_without_posix_fadvise_as_on_macos_rows_are_read_one_by_one_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies = FloatCopies(tmp_path / "1.v.f32", 2)
    copies.write([0, 1, 2], np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32))
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    monkeypatch.setattr(floats, "FROM_DISK_NS", -1)
    np.testing.assert_array_equal(copies.read([2, 0, 5]), np.array([[5, 6], [1, 2], [0, 0]], dtype=np.float32))


@needs_advice
def test_a_file_system_that_refuses_the_advice_still_gives_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies = FloatCopies(tmp_path / "1.v.f32", 2)
    copies.write([0, 1, 2], np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32))
    refused: list[int] = []

    def refusing(fd: int, offset: int, length: int, advice: int) -> None:
        refused.append(offset)
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refusing)
    monkeypatch.setattr(floats, "FROM_DISK_NS", -1)
    found = copies.read([2, 0, 1, 7])
    np.testing.assert_array_equal(found, np.array([[5, 6], [1, 2], [3, 4], [0, 0]], dtype=np.float32))
    assert refused == [0]  # asked once, refused, and read on without asking again
