"""`GET /metrics`: the Prometheus text exposition of this app's registry (memhub/metrics.py).

Guarded by its own secret, MEMHUB_METRICS_TOKEN, sent as `Authorization: Bearer <it>` and
compared in constant time; not by the MCP token gate, so no client token (which can write
memories) is a scraper's credential, and no scraper's is a client's. Unset, the route answers
404: metrics are off unless the operator turns them on. Open to any Host (gateway/host_check.py
says why).
"""

from __future__ import annotations

import hmac

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ..errors import MemhubError, NotFound, Unauthorized
from ..metrics import CONTENT_TYPE
from ..runtime import Runtime

SETTING = "MEMHUB_METRICS_TOKEN"


def bearer(header: str | None) -> str | None:
    """The credentials of an `Authorization: Bearer ...` header, else None."""
    scheme, _, credentials = (header or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None


def authorized(header: str | None, expected: bytes) -> bool:
    sent = bearer(header)
    return sent is not None and hmac.compare_digest(sent.encode("utf-8", "replace"), expected)


def _error(err: MemhubError, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": err.to_payload()}, status_code=err.http_status,
                        headers={"Cache-Control": "no-store", **(headers or {})})


def install(app: FastAPI, rt: Runtime) -> None:
    token = rt.settings.metrics_token.get_secret_value() if rt.settings.metrics_token else ""
    # A blank setting is no setting: otherwise no header could ever match it.
    expected = token.strip().encode("utf-8") if token.strip() else None

    async def metrics(request: Request) -> Response:
        if expected is None:
            return _error(NotFound("metrics are off",
                                   remedy=f"Set {SETTING} and restart memhub; the scraper sends "
                                          "it as 'Authorization: Bearer <token>'."))
        if not authorized(request.headers.get("authorization"), expected):
            return _error(
                Unauthorized("missing or wrong metrics token",
                             remedy=f"Send {SETTING} as 'Authorization: Bearer <token>'."),
                {"WWW-Authenticate": 'Bearer realm="memhub-metrics"'})
        await rt.metrics.sample(rt.backend, rt.embedding_worker)
        return Response(rt.metrics.render(), media_type=CONTENT_TYPE,
                        headers={"Cache-Control": "no-store"})

    app.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)
