"""Where reads need no key (a loopback address, the default), only requests naming a loopback host are answered.

A web page can rebind its own host name to 127.0.0.1 (DNS rebinding): to the browser, a service on loopback is
then the page's own origin, so the page could search the index and read the answers, or ``/readyz`` and
``/metrics``, though it could never reach the service otherwise. Such a request names the page's host in its
``Host`` header; a caller on this machine names ``localhost`` or a loopback address. Where reads need a key the
check is off: a rebinding page has no key to send, and a proxy may pass its callers' host names on.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from esbridge.service.limits import send_error


def names_loopback(host: str) -> bool:
    """Whether a ``Host`` header value (``localhost:8088``, ``127.0.0.1``, ``[::1]:8088``) names this machine's
    loopback interface."""
    name = host.strip().lower()
    name = name[1:].partition("]")[0] if name.startswith("[") else name.partition(":")[0]
    name = name.removesuffix(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class LoopbackHost:
    """Answers 403 ``host_refused`` to a request whose ``Host`` names anything but loopback (see the module
    docstring); a request without one (HTTP/1.0, which no browser sends) is answered."""

    def __init__(self, app: ASGIApp, *, on_refusal: Callable[[], None] | None = None) -> None:
        self.app = app
        self.on_refusal = on_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((value for key, value in scope["headers"] if key == b"host"), None)
            if host is not None and not names_loopback(host.decode("latin-1")):
                if self.on_refusal is not None:
                    self.on_refusal()
                message = (
                    "the request names a host other than localhost or a loopback address, as a web page rebinding "
                    "its name to this machine would; reads need no key here, so only requests to localhost, "
                    "127.0.0.1 or [::1] are answered. Behind a proxy, have it send one of those as Host, or set "
                    "service.require_key_for_reads and give callers keys"
                )
                await send_error(scope, send, 403, "host_refused", message)
                return
        await self.app(scope, receive, send)
