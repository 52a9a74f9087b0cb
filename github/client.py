"""GitHub's REST API, read-only, for checking claims (storage/claims.py): is a pull request
merged, what is a branch's head.

One client per process (held by the Runtime), so what it learns outlives a call:
- conditional requests: each answer's ETag is kept (a bounded LRU) per namespace, so one tenant
  never learns from a 304 what another checked; the next request for the same URL from the
  same namespace sends If-None-Match, and a 304 (which GitHub does not count against the rate
  limit) reuses the kept answer;
- the rate limit: a 403 or 429 with `x-ratelimit-remaining: 0` (until `x-ratelimit-reset`) or a
  `retry-after` stops every request until then; meanwhile each check answers unverifiable
  without sending anything;
- bounded concurrency (MEMHUB_GITHUB_CONCURRENCY requests at once) and a per-request timeout
  (MEMHUB_GITHUB_TIMEOUT_SECONDS).
Every failure is an answer, never an exception: `Answer.body` is None with the reason, and the
caller's verdict is unverifiable. The token is sent only in the Authorization header and never
logged or returned. Which repositories a namespace may ask about is decided before this client
is called (usecases/reconcile.py: the operator's grants).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from .. import bounded_json
from ..config import Settings
from ..lru import LRU

ETAG_CACHE = 1024
MAX_BODY = 1024 * 1024  # a pull request or branch object is a few KB
API_VERSION = "2022-11-28"


@dataclass
class Answer:
    """GitHub's JSON object, or None with `reason` (why nothing decides)."""
    body: dict[str, Any] | None
    reason: str | None = None
    status: int | None = None
    cached: bool = False  # a 304 answered from the kept copy
    date: datetime | None = None  # the answer's Date header: GitHub's clock when it answered


class GitHubClient:
    def __init__(self, settings: Settings) -> None:
        self.base = settings.github_api_url.rstrip("/")
        self._token = settings.github_token
        self._timeout = settings.github_timeout_seconds
        self._gate = asyncio.Semaphore(settings.github_concurrency)
        self._etags: LRU[tuple[str, str], tuple[str, dict[str, Any]]] = LRU(ETAG_CACHE)
        self._blocked_until = 0.0  # time.time() before which nothing is sent
        self._http: httpx.AsyncClient | None = None
        self.requests_sent = 0
        self.not_modified = 0

    @property
    def configured(self) -> bool:
        return self._token is not None

    def blocked_for(self) -> float:
        return max(0.0, self._blocked_until - time.time())

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.base, timeout=self._timeout, follow_redirects=False,
                headers={"Accept": "application/vnd.github+json",
                         "X-GitHub-Api-Version": API_VERSION, "User-Agent": "memhub"})
        return self._http

    async def pull_request(self, namespace: str, repo: str, number: int) -> Answer:
        """GitHub's pull request object, asked for `namespace` (whose ETags it uses)."""
        return await self._get(namespace, f"/repos/{repo}/pulls/{number}")

    async def branch(self, namespace: str, repo: str, branch: str) -> Answer:
        """GitHub's branch object, asked for `namespace` (whose ETags it uses)."""
        return await self._get(namespace, f"/repos/{repo}/branches/{quote(branch, safe='')}")

    async def _get(self, namespace: str, path: str) -> Answer:
        if self._token is None:
            return Answer(None, "no GitHub token configured (MEMHUB_GITHUB_TOKEN)")
        wait = self.blocked_for()
        if wait > 0:
            return Answer(None, f"GitHub rate limit: nothing sent for {wait:.0f} s more")
        headers = {"Authorization": f"Bearer {self._token.get_secret_value()}"}
        key = (namespace, path)
        kept = self._etags.get(key)
        if kept is not None:
            headers["If-None-Match"] = kept[0]
        try:
            async with self._gate:
                # Checked again: another check may have hit the limit while this one waited.
                if self.blocked_for() > 0:
                    return Answer(None, "GitHub rate limit reached by another check")
                self.requests_sent += 1
                async with asyncio.timeout(self._timeout):
                    response = await self._client().get(path, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            return Answer(None, f"GitHub did not answer within {self._timeout:g} s")
        except httpx.HTTPError as exc:
            return Answer(None, f"GitHub unreachable ({type(exc).__name__})")
        return self._read(key, response, kept)

    def _read(self, key: tuple[str, str], response: httpx.Response,
              kept: tuple[str, dict[str, Any]] | None) -> Answer:
        status = response.status_code
        if status == 304 and kept is not None:
            self.not_modified += 1
            return Answer(kept[1], status=304, cached=True, date=_date(response))
        if status in (403, 429) and self._note_limit(response):
            return Answer(None, "GitHub rate limit reached", status)
        if status == 404:
            return Answer(None, "not found, or not visible to this token", status)
        if status in (401, 403):
            return Answer(None, "GitHub refused the token", status)
        if status != 200:
            return Answer(None, f"GitHub answered HTTP {status}", status)
        if len(response.content) > MAX_BODY:
            return Answer(None, "GitHub's answer was too large", status)
        try:
            body = bounded_json.loads(response.content)
        except bounded_json.TooDeep:
            return Answer(None, "GitHub's answer was nested more than "
                                f"{bounded_json.MAX_DEPTH} levels deep", status)
        except ValueError:
            return Answer(None, "GitHub's answer was not JSON", status)
        if not isinstance(body, dict):
            return Answer(None, "GitHub's answer was not an object", status)
        etag = response.headers.get("etag")
        if etag and len(etag) <= 200:
            self._etags.put(key, (etag, body))
        return Answer(body, status=status, date=_date(response))

    def _note_limit(self, response: httpx.Response) -> bool:
        """Whether the answer is a rate limit; if so, send nothing until it ends."""
        headers = response.headers
        until = None
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            try:
                until = time.time() + min(float(retry_after), 3600.0)
            except ValueError:
                until = None
        if until is None and headers.get("x-ratelimit-remaining") == "0":
            try:
                until = min(float(headers.get("x-ratelimit-reset", "")), time.time() + 3600.0)
            except ValueError:
                until = time.time() + 60.0
        if until is None and response.status_code == 429:
            until = time.time() + 60.0
        if until is None:
            return False
        self._blocked_until = max(self._blocked_until, until)
        return True


def _date(response: httpx.Response) -> datetime | None:
    """When GitHub answered, by its own clock (the Date header), if it said."""
    value = response.headers.get("date")
    if value is None or len(value) > 64:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else None
