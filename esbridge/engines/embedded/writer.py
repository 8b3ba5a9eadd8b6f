"""The writer lock of a data directory: ``<data_dir>/writer.lock``, an advisory ``flock`` that the kernel drops
when its process dies, so a killed writer never blocks the next one. The file holds the holder's pid, which
a process refused the lock is told.

The lock file stays after its holder exits, so it can look stale and be removed while a writer runs; the next
process would then lock a new file of that name. The data directory itself is locked as well (``flock`` on the
folder), which no removal of a file undoes."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "writer.lock"


class WriterBusy(RuntimeError):
    """Another process holds the data directory's writer lock."""


class WriterLock:
    """Not thread-safe: its owner serialises calls."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._fd: int | None = None
        self._folder_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self) -> None:
        """Take the lock for this process (kept until ``release``), or raise WriterBusy naming its holder."""
        if self._fd is not None:
            return
        fd = os.open(self._root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            folder_fd = self._lock_folder()
        except BlockingIOError:
            # (the pid of a holder whose lock file was removed is not in the new file: "unknown")
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise WriterBusy(
                f"the data directory {self._root} is being written by another process (pid {holder}); "
                "the embedded engine takes one writer at a time: stop that process or wait for it to close"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd, self._folder_fd = fd, folder_fd

    def _lock_folder(self) -> int | None:
        """The data directory's descriptor, locked; BlockingIOError when another process has it locked. None where
        the file system cannot lock a folder (the lock file alone then stands)."""
        fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise
        except OSError:
            os.close(fd)
            return None
        return fd

    def release(self) -> None:
        for fd in (self._fd, self._folder_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._folder_fd = None
