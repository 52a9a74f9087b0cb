"""`GET /artifact/{sha256}`: stream an artifact's bytes over plain HTTP, with `Range`.

Behind the token gate (gateway/token_gate.py sets request.state.principal). The seed left this
route open because "the hash is the capability"; here the token's namespaces must include
one that holds the artifact, and a hash the token may not see answers 404 exactly like an
unknown one, so existence is not revealed.
"""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from ..errors import MemhubError, NotFound
from ..runtime import Runtime
from ..storage.principal import Principal

logger = logging.getLogger(__name__)

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
# Artifacts are written by any client: never let a browser run one as a page of this origin.
_SAFETY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, max-age=3600",
    "Accept-Ranges": "bytes",
}


def parse_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """(start, end_exclusive) for one satisfiable range; None to serve everything (no header,
    or a form we ignore, e.g. several ranges); "unsatisfiable" for a 416."""
    if not header:
        return None
    match = _RANGE.match(header.strip().replace(" ", ""))
    if not match:
        return None
    first, last = match.groups()
    if first == "" and last == "":
        return None
    if first == "":
        suffix = int(last)
        if suffix == 0 or size == 0:
            return "unsatisfiable"
        return max(size - suffix, 0), size
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if last != "" and int(last) < start:
        return None  # syntactically invalid: ignore the header (RFC 9110 14.2)
    if start >= size:
        return "unsatisfiable"
    return start, end + 1


def _error(err: MemhubError) -> JSONResponse:
    return JSONResponse({"error": err.to_payload()}, status_code=err.http_status,
                        headers={"Cache-Control": "no-store"})


def install(app: FastAPI, rt: Runtime) -> None:
    async def serve(sha256: str, request: Request) -> Response:
        principal = getattr(request.state, "principal", None)
        if not isinstance(principal, Principal):  # the gate always sets it; fail closed
            return _error(NotFound("no such artifact"))
        backend = rt.storage()
        try:
            meta = await backend.artifact_meta(principal, sha256.lower())
        except MemhubError as err:
            return _error(err)
        size = meta["size"]
        headers = {**_SAFETY_HEADERS, "ETag": f'"{meta["sha256"]}"'}
        wanted = parse_range(request.headers.get("range"), size)
        if wanted == "unsatisfiable":
            return Response(status_code=416, headers={**headers,
                                                      "Content-Range": f"bytes */{size}"})
        status = 200
        start, end = 0, size
        if isinstance(wanted, tuple):
            start, end = wanted
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        headers["Content-Length"] = str(end - start)
        if request.method == "HEAD":
            return Response(status_code=status, headers=headers, media_type=meta["media_type"])

        async def body():
            try:
                async for piece in backend.artifact_stream(principal, meta["sha256"], start, end):
                    yield piece
            except MemhubError as err:
                # Headers are gone already: the client sees a short body and a dropped
                # connection, which is how HTTP says "incomplete".
                logger.warning("artifact stream aborted", extra={"code": err.code})
                raise

        return StreamingResponse(body(), status_code=status, headers=headers,
                                 media_type=meta["media_type"])

    app.add_api_route("/artifact/{sha256}", serve, methods=["GET", "HEAD"])
