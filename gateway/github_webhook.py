"""POST /webhook/github: GitHub's push and pull_request deliveries decide the claims they affect,
in the namespaces that granted the repository, without asking the API
(storage/postgres/memories/claims.webhook_verdicts).

Only with MEMHUB_GITHUB_WEBHOOK_SECRET set (404 otherwise). In this order, before any parsing:
the declared size (413 over MAX_BODY), then the body read up to MAX_BODY + 1 bytes (413), then
`X-Hub-Signature-256`, HMAC-SHA256 of the raw body under the secret, compared in constant time
(401 when missing or wrong); then the JSON, its nesting bounded (400). A delivery id seen
before, or a body seen before under another id (the signature covers only the body, so a
captured delivery can be resent under any id), is answered 200 and does nothing. A delivery
older than the state a claim last recorded (its event time against the claim's newest
observed_at) leaves that claim alone: an old delivery cannot roll a verdict back.
What decides what:
- pull_request `closed`: merged -> the PR's claims are current, else stale; `reopened`: stale;
  its time is the pull request's `updated_at`;
- push to refs/heads/B: B's claims are current if the claimed commit is the new head
  (`after`), else stale; a deleted branch makes them stale; its time is the repository's
  `pushed_at` (else the head commit's timestamp).
A delivery without its time decides nothing, and anything else (ping, other events and
actions) is acknowledged and ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .. import bounded_json
from ..errors import InvalidInput, MemhubError
from ..runtime import Runtime
from ..storage.claims import SHA_RE, github_time, valid_repo

logger = logging.getLogger(__name__)

PATH = "/webhook/github"
# GitHub caps a delivery at 25 MB; the fields read here are in the first few KB of any push or
# pull_request payload, but the signature covers the whole body, so it is read whole.
MAX_BODY = 5 * 1024 * 1024
_DELIVERY = re.compile(r"^[A-Za-z0-9-]{1,100}$")
_EVENT = re.compile(r"^[a-z_]{1,64}$")


def _answer(status: int, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status)


async def _body(request: Request) -> bytes | None:
    """The raw body, or None when it is over MAX_BODY (read no further than that)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def signed(secret: bytes, body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.encode("ascii", "replace"))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def affected(event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """What the delivery decides: {"repo", "pr", "merged", "evidence", "observed_at"} or
    {"repo", "branch", "head_sha", "observed_at"}; None when it decides nothing."""
    repository = _object(payload.get("repository"))
    repo = repository.get("full_name")
    if not valid_repo(repo):
        return None
    if event == "pull_request":
        pr = _object(payload.get("pull_request"))
        observed = github_time(pr.get("updated_at"))
        number = payload.get("number", pr.get("number"))
        if not isinstance(number, int) or isinstance(number, bool) or observed is None:
            return None
        action = payload.get("action")
        if action == "closed":
            merged = pr.get("merged") is True
        elif action == "reopened":
            merged = False
        else:
            return None
        return {"repo": repo, "pr": number, "merged": merged, "observed_at": observed,
                "evidence": {"action": action, "merged": merged,
                             "merged_at": pr.get("merged_at")
                             if isinstance(pr.get("merged_at"), str) else None}}
    if event == "push":
        ref, after = payload.get("ref"), payload.get("after")
        if not isinstance(ref, str) or not ref.startswith("refs/heads/"):
            return None
        if not isinstance(after, str) or not SHA_RE.fullmatch(after):
            return None
        # When GitHub took the push; a head commit's own timestamp is its author's clock (and
        # a force-push back to an older commit carries an older one), so only a fallback.
        observed = (github_time(repository.get("pushed_at"))
                    or github_time(_object(payload.get("head_commit")).get("timestamp")))
        if observed is None:
            return None
        # A deleted branch reports after = 40 zeros: no claimed commit starts with that.
        return {"repo": repo, "branch": ref.removeprefix("refs/heads/")[:255],
                "head_sha": after, "observed_at": observed}
    return None


def install(app: FastAPI, rt: Runtime) -> None:
    @app.post(PATH, include_in_schema=False)
    async def github_webhook(request: Request) -> JSONResponse:
        secret = rt.settings.github_webhook_secret
        if secret is None:
            return _answer(404, detail="Not Found")
        body = await _body(request)
        if body is None:
            return _answer(413, code="TOO_LARGE", message=f"deliveries are at most {MAX_BODY} "
                                                          "bytes")
        if not signed(secret.get_secret_value().encode(), body,
                      request.headers.get("x-hub-signature-256")):
            return _answer(401, code="UNAUTHORIZED",
                           message="X-Hub-Signature-256 is missing or does not match",
                           remedy="Set the webhook's secret to MEMHUB_GITHUB_WEBHOOK_SECRET.")
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        if not _EVENT.fullmatch(event) or not _DELIVERY.fullmatch(delivery):
            return _answer(400, code="INVALID_INPUT",
                           message="X-GitHub-Event and X-GitHub-Delivery are required")
        try:
            payload = bounded_json.loads(body)
        except ValueError as exc:
            # Nesting past bounded_json.MAX_DEPTH is malformed too, never a RecursionError.
            refused = InvalidInput(f"the body is not JSON: {exc}"[:200], field="body",
                                   remedy="Send GitHub's delivery as it was signed.")
            return _answer(refused.http_status, **refused.to_payload())
        decided = affected(event, payload) if isinstance(payload, dict) else None
        try:
            written = await rt.storage().webhook_verdicts(
                delivery, event, hashlib.sha256(body).digest(), decided or {})
        except MemhubError as err:
            return _answer(err.http_status, **err.to_payload())
        if written is None:
            return _answer(200, delivery=delivery, duplicate=True)
        logger.info("github delivery", extra={"event": event, "verdicts": written})
        return _answer(200, delivery=delivery, verdicts=written)
