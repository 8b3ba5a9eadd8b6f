"""CORS for browser callers: Starlette's middleware, with a refused preflight answered like every other error
of the service (403 ``cors_refused`` in the JSON error shape) instead of Starlette's plain-text 400."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from esbridge.service.errors import error_body

_BODY_HEADERS = ("content-length", "content-type")


class ServiceCORS(CORSMiddleware):
    """Starlette's CORS for the given origins, methods and headers; ``on_refusal`` counts refused preflights."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        origins: Sequence[str],
        methods: Sequence[str],
        headers: Sequence[str],
        on_refusal: Callable[[], None] | None = None,
    ) -> None:
        # A browser shows a caller only the headers it is told to: the wait a 429 or 503 asks for, and the request
        # id to quote, are not among those it shows by default.
        super().__init__(
            app,
            allow_origins=origins,
            allow_methods=methods,
            allow_headers=headers,
            expose_headers=["Retry-After", "X-Request-ID"],
        )
        self.on_refusal = on_refusal

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code < 400:
            return answer
        if self.on_refusal is not None:
            self.on_refusal()
        message = "CORS preflight refused: " + "; ".join(self._refusals(request_headers))
        kept = {name: value for name, value in answer.headers.items() if name not in _BODY_HEADERS}
        return JSONResponse(error_body("cors_refused", message), 403, headers=kept)

    def _refusals(self, request_headers: Headers) -> list[str]:
        origin = request_headers["origin"]
        method = request_headers["access-control-request-method"]
        asked = request_headers.get("access-control-request-headers", "").split(",")
        refusals = []
        if not self.is_allowed_origin(origin=origin):
            refusals.append(f"origin {origin} is not in service.cors_origins")
        if method not in self.allow_methods:
            refusals.append(f"method {method} is not allowed")
        other_headers = [
            name.strip() for name in asked if name.strip() and name.strip().lower() not in self.allow_headers
        ]
        if other_headers:
            refusals.append(f"header(s) {', '.join(other_headers)} not allowed")
        return refusals or ["the request is not allowed"]
