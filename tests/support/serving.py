"""Running an ASGI app under a real uvicorn on 127.0.0.1 in a background thread, for tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def running(config: uvicorn.Config) -> Iterator[uvicorn.Server]:
    """A uvicorn server for ``config``, started in a background thread; stopped (gracefully) on exit."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def uvicorn_thread(app: Any, **config: Any) -> Iterator[tuple[uvicorn.Server, str]]:
    """The started server and its base URL; stopped (gracefully) on exit."""
    port = free_port()
    with running(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)) as server:
        yield server, f"http://127.0.0.1:{port}"
