"""Where reads need no key (a loopback address, the default), only requests naming a loopback host, or a host
``service.allowed_hosts`` lists, are answered.

A web page can rebind its own host name to the service's address (DNS rebinding): to the browser, the service is
then the page's own origin, so the page could search the index and read the answers, or ``/readyz`` and
``/metrics``, though it could never reach the service otherwise. Such a request names the page's host in its
``Host`` header; a caller on this machine names ``localhost`` or a loopback address, and a caller on a trusted
network one of the names the operator allowed. Where reads need a key the check is off unless names are allowed:
a rebinding page has no key to send, and a proxy may pass its callers' host names on. Off loopback with open
reads and no allowed names nothing can tell a rebinding page from a caller, so ``serve`` warns at start-up.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from esbridge.service.limits import send_error


def host_of(header: str) -> str:
    """The host a ``Host`` header value names (``localhost:8088`` -> ``localhost``, ``[::1]:8088`` -> ``::1``),
    lower case, without a trailing dot."""
    name = header.strip().lower()
    name = name[1:].partition("]")[0] if name.startswith("[") else name.partition(":")[0]
    return name.removesuffix(".")


def names_loopback(host: str) -> bool:
    """Whether a ``Host`` header value (``localhost:8088``, ``127.0.0.1``, ``[::1]:8088``) names this machine's
    loopback interface."""
    name = host_of(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def names_allowed(host: str, allowed: Sequence[str]) -> bool:
    """Whether a ``Host`` header value names loopback or one of ``allowed`` (``service.allowed_hosts`` entries as
    read: ``*.example.com`` is every name under ``example.com``, not ``example.com`` itself)."""
    if names_loopback(host):
        return True
    name = host_of(host)
    return any(name.endswith(entry[1:]) if entry.startswith("*.") else name == entry for entry in allowed)


class HostCheck:
    """Answers 403 ``host_refused`` to a request whose ``Host`` names neither loopback nor an allowed host (see the
    module docstring); a request without one (HTTP/1.0, which no browser sends) is answered."""

    def __init__(
        self, app: ASGIApp, *, allowed: Sequence[str] = (), on_refusal: Callable[[], None] | None = None
    ) -> None:
        self.app = app
        self.allowed = tuple(allowed)
        self.on_refusal = on_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((value for key, value in scope["headers"] if key == b"host"), None)
            if host is not None and not names_allowed(host.decode("latin-1"), self.allowed):
                if self.on_refusal is not None:
                    self.on_refusal()
                named = "localhost, 127.0.0.1, [::1]" + (" or a host of service.allowed_hosts" if self.allowed else "")
                message = (
                    "the request names a host other than localhost, a loopback address or one of "
                    "service.allowed_hosts, as a web page rebinding its name to this service's address would; "
                    f"only requests to {named} are answered. Behind a proxy, have it send one of those as Host, "
                    "list the name in service.allowed_hosts, or set service.require_key_for_reads and give callers keys"
                )
                await send_error(scope, send, 403, "host_refused", message)
                return
        await self.app(scope, receive, send)


def open_reads_warning(host: str, allowed: Sequence[str], reads_need_key: bool) -> str | None:
    """What ``serve`` logs at start-up when reads are open off loopback with no Host check (see the module
    docstring); None otherwise."""
    if reads_need_key or allowed:
        return None
    return (
        f"reads need no key (service.open_reads) and the service listens on {host}, not on loopback, with no "
        "service.allowed_hosts: any web page a user on the network opens can rebind its name to this address (DNS "
        "rebinding) and search the index, /readyz and /metrics through the user's browser. List the names callers "
        "use in service.allowed_hosts (ESBRIDGE_SERVICE__ALLOWED_HOSTS=search.internal) to refuse every other Host"
    )
