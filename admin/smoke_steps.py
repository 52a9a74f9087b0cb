"""`memhub-admin smoke`'s sequence: what a client does, against a live memhub, one step at a
time (docs/operations.md, The smoke check).

A real MCP client (fastmcp's, over Streamable HTTP, the token in the Authorization header)
runs the documented path: /healthz, a 401 without a token, the exact tool list of the token's
profile (by header and by `?token=`), session_bootstrap, remember, search, revise, supersede,
recall, handoff save and load, the change feed, forget. Each step records ok, failed (with why)
or skipped (a tool outside the profile, or an earlier step it needs failed); no step stops the
others. Everything it writes carries the run's id, so runs never collide, and what it wrote is
retired again at the end (`retire`): the memories forgotten or superseded, the handoff taken,
the session closed. With the intent gate on, a preview is confirmed as a client would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

TIMEOUT = 30.0  # seconds, each request
CHANGES_PAGES = 10
MESSAGE_CHARS = 300


class Failed(Exception):
    """A step's check did not hold: `why`, with what was seen in `detail`."""

    def __init__(self, why: str, **detail: Any) -> None:
        super().__init__(why)
        self.why = why
        self.detail = detail


class Sequence:
    def __init__(self, base_url: str, token: str, namespace: str, profile: str,
                 expected: frozenset[str], run: str) -> None:
        self.base_url, self.token, self.namespace = base_url, token, namespace
        self.profile, self.expected, self.run_id = profile, expected, run
        self.steps: list[dict[str, Any]] = []
        self.made: dict[str, Any] = {}
        self.mcp: Client | None = None

    # --- running steps ------------------------------------------------------------------
    async def step(self, name: str, fn: Callable[[], Awaitable[dict[str, Any] | None]], *,
                   tools: tuple[str, ...] = (), needs: tuple[str, ...] = ()) -> None:
        record: dict[str, Any] = {"step": name}
        outside = [t for t in tools if t not in self.expected]
        missing = [n for n in needs if n not in self.made]
        started = time.perf_counter()
        if outside:
            record.update(status="skipped", why=f"{', '.join(outside)} not in the "
                                                f"{self.profile} profile")
        elif missing:
            record.update(status="skipped", why=f"needs {', '.join(missing)}, which an "
                                                "earlier step did not give")
        else:
            try:
                detail = await fn()
            except Failed as failed:
                record.update(status="failed", why=failed.why, **failed.detail)
            except Exception as exc:  # any failure of the service is the smoke's finding
                record.update(status="failed", why=f"{type(exc).__name__}: "
                                                   f"{str(exc)[:MESSAGE_CHARS]}")
            else:
                record.update(status="ok", **(detail or {}))
        record["ms"] = round((time.perf_counter() - started) * 1000, 1)
        self.steps.append(record)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.mcp is None:
            raise Failed("no MCP session")
        try:
            result = await self.mcp.call_tool(tool, {"namespace": self.namespace, **arguments})
        except ToolError as err:
            raise Failed(f"{tool} answered an error", **_error_of(err)) from None
        return result.structured_content or {}

    async def write(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict]:
        """The write's answer; a preview (the intent gate is on) is confirmed as a client
        confirms it."""
        answer = await self.call(tool, arguments)
        if answer.get("outcome") != "preview":
            return answer, {}
        gate = {"gate": "confirmed", **({"tier2": answer["tier2"]} if "tier2" in answer
                                        else {})}
        return await self.call(tool, {**arguments,
                                      "confirmation": answer["confirmation"]}), gate

    def content(self, what: str) -> str:
        return f"memhub smoke check {self.run_id}: {what}. Written by memhub-admin smoke."

    # --- the sequence -------------------------------------------------------------------
    async def run(self) -> list[dict[str, Any]]:
        async with AsyncExitStack() as stack:
            await self.step("healthz", self.healthz)
            await self.step("unauthenticated", self.unauthenticated)

            async def tools_list() -> dict[str, Any]:
                self.mcp = await stack.enter_async_context(self._client(via_query=False))
                self.made["mcp"] = True  # the session the steps below call through
                return await self.tools_list()

            await self.step("tools_list", tools_list)
            await self.step("token_in_query", self.token_in_query)
            mcp = ("mcp",)
            await self.step("bootstrap", self.bootstrap, tools=("session_bootstrap",),
                            needs=mcp)
            await self.step("remember", self.remember, tools=("memory_remember",), needs=mcp)
            await self.step("search", self.search, tools=("memory_search",), needs=("first",))
            await self.step("revise", self.revise, tools=("memory_revise",), needs=("first",))
            await self.step("supersede", self.supersede, tools=("memory_remember",),
                            needs=("first",))
            await self.step("recall", self.recall, tools=("recall",), needs=("second",))
            await self.step("handoff_save", self.handoff_save, tools=("handoff_save",),
                            needs=mcp)
            await self.step("handoff_load", self.handoff_load, tools=("handoff_load",),
                            needs=("handoff",))
            await self.step("changes", self.changes, tools=("memory_changes",),
                            needs=("cursor", "second", "handoff"))
            await self.step("forget", self.forget, tools=("memory_forget",), needs=("second",))
            await self.step("retire", self.retire, needs=mcp)
        return self.steps

    def _client(self, *, via_query: bool) -> Client:
        url = f"{self.base_url}/mcp"
        transport = (StreamableHttpTransport(f"{url}?token={self.token}") if via_query else
                     StreamableHttpTransport(url, headers={
                         "Authorization": f"Bearer {self.token}"}))
        return Client(transport, timeout=TIMEOUT)

    async def healthz(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            answer = await http.get(f"{self.base_url}/healthz")
        body = _json(answer)
        if answer.status_code != 200 or body.get("db") != "ok":
            raise Failed("/healthz is not ok", http_status=answer.status_code,
                         db=body.get("db"))
        return {"model": body.get("model")}

    async def unauthenticated(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            answer = await http.post(f"{self.base_url}/mcp", json={})
        if answer.status_code != 401 or "www-authenticate" not in answer.headers:
            raise Failed("/mcp without a token is not 401 with WWW-Authenticate",
                         http_status=answer.status_code)
        return {}

    async def tools_list(self) -> dict[str, Any]:
        assert self.mcp is not None
        names = {tool.name for tool in await self.mcp.list_tools()}
        missing, unexpected = sorted(self.expected - names), sorted(names - self.expected)
        if missing or unexpected:
            raise Failed(f"the tool list is not the {self.profile} profile's",
                         missing=missing, unexpected=unexpected)
        return {"tools": len(names)}

    async def token_in_query(self) -> dict[str, Any]:
        async with self._client(via_query=True) as client:
            names = {tool.name for tool in await client.list_tools()}
        if names != self.expected:
            raise Failed(f"the tool list is not the {self.profile} profile's",
                         missing=sorted(self.expected - names),
                         unexpected=sorted(names - self.expected))
        return {"tools": len(names)}

    async def bootstrap(self) -> dict[str, Any]:
        answer = await self.call("session_bootstrap", {"title": f"memhub smoke {self.run_id}"})
        steps = {s["step"]: s.get("status") for s in answer.get("steps_run", [])}
        if any(steps.get(s) != "ok" for s in ("database", "changes", "session")):
            raise Failed("session_bootstrap's database, changes or session step is not ok",
                         steps_run=steps)
        self.made["session"] = answer["session"]["id"]
        self.made["cursor"] = answer["changes"]["next_cursor"]
        return {"degraded": sorted(s for s, status in steps.items() if status == "degraded")}

    async def remember(self) -> dict[str, Any]:
        answer, gate = await self.write("memory_remember", {
            "kind": "FACT", "title": f"memhub smoke {self.run_id}", "tags": ["memhub-smoke"],
            "content": self.content("the first fact"),
            "client_request_id": f"smoke-{self.run_id}-remember"})
        if answer.get("outcome") != "created":
            raise Failed("memory_remember did not create", outcome=answer.get("outcome"))
        self.made["first"] = answer["memory"]["id"]
        return gate

    async def search(self) -> dict[str, Any]:
        answer = await self.call("memory_search", {"query": self.content("the first fact"),
                                                   "limit": 5})
        ids = [r["id"] for r in answer.get("results", [])]
        if self.made["first"] not in ids:
            raise Failed("memory_search did not find the memory just written", found=len(ids))
        return {"degraded": bool(answer.get("degraded"))}

    async def revise(self) -> dict[str, Any]:
        answer = await self.call("memory_revise", {
            "id": self.made["first"], "expected_revision": 1,
            "content": self.content("the first fact, revised")})
        if answer.get("outcome") != "revised" or answer["memory"].get("revision") != 2:
            raise Failed("memory_revise did not make revision 2", outcome=answer.get("outcome"))
        return {}

    async def supersede(self) -> dict[str, Any]:
        answer, gate = await self.write("memory_remember", {
            "kind": "FACT", "title": f"memhub smoke {self.run_id}", "tags": ["memhub-smoke"],
            "content": self.content("the second fact, replacing the first"),
            "supersedes": [self.made["first"]]})
        if answer.get("outcome") != "created" or answer.get("superseded") != [self.made["first"]]:
            raise Failed("memory_remember with supersedes did not replace the first memory",
                         outcome=answer.get("outcome"))
        self.made["second"] = answer["memory"]["id"]
        return gate

    async def recall(self) -> dict[str, Any]:
        answer = await self.call("recall", {
            "query": self.content("the second fact, replacing the first")})
        ids = [r["id"] for r in answer.get("results", [])]
        if self.made["first"] in ids:
            raise Failed("recall returned the superseded memory")
        if self.made["second"] not in ids and not answer.get("degraded"):
            raise Failed("recall did not find the memory just written", found=len(ids))
        return {"found": self.made["second"] in ids, "degraded": bool(answer.get("degraded"))}

    async def handoff_save(self) -> dict[str, Any]:
        answer = await self.call("handoff_save", {
            "title": f"memhub smoke {self.run_id}", "body": self.content("a handoff"),
            "client_request_id": f"smoke-{self.run_id}-handoff"})
        if answer.get("outcome") != "created":
            raise Failed("handoff_save did not create", outcome=answer.get("outcome"))
        self.made["handoff"] = answer["handoff"]["id"]
        return {}

    async def handoff_load(self) -> dict[str, Any]:
        answer = await self.call("handoff_load", {"id": self.made["handoff"], "take": True})
        if answer.get("outcome") != "taken" or answer["handoff"]["id"] != self.made["handoff"]:
            raise Failed("handoff_load did not take the handoff", outcome=answer.get("outcome"))
        self.made["taken"] = True
        return {}

    async def changes(self) -> dict[str, Any]:
        first, second, handoff = self.made["first"], self.made["second"], self.made["handoff"]
        want = {("created", first), ("revised", first), ("superseded", first),
                ("created", second), ("saved", handoff)}
        if self.made.get("taken"):
            want.add(("taken", handoff))
        seen: set[tuple[str, str]] = set()
        cursor = self.made["cursor"]
        for _ in range(CHANGES_PAGES):
            page = await self.call("memory_changes", {"cursor": cursor, "limit": 100})
            seen |= {(c["what"], c["target_id"]) for c in page.get("changes", [])}
            cursor = page.get("next_cursor")
            if not page.get("has_more"):
                break
        absent = sorted(f"{what} {target}" for what, target in want - seen)
        if absent:
            raise Failed("the change feed lacks this run's writes", missing=absent)
        return {"changes": len(seen)}

    async def forget(self) -> dict[str, Any]:
        answer, gate = await self.write("memory_forget", {
            "id": self.made["second"], "reason": f"memhub smoke {self.run_id}: cleaning up"})
        if answer.get("outcome") != "forgotten":
            raise Failed("memory_forget did not forget", outcome=answer.get("outcome"))
        self.made["forgotten"] = True
        return gate

    async def retire(self) -> dict[str, Any]:
        """What an earlier failure left live is retired; the bootstrap's session closed."""
        done: list[str] = []
        live = ([self.made["second"]] if "second" in self.made and "forgotten" not in self.made
                else [self.made["first"]] if "first" in self.made and "second" not in self.made
                else [])
        for memory_id in live:
            await self.write("memory_forget", {"id": memory_id,
                                               "reason": f"memhub smoke {self.run_id}: cleanup"})
            done.append(f"forgot {memory_id}")
        if "handoff" in self.made and "taken" not in self.made:
            await self.call("handoff_load", {"id": self.made["handoff"], "take": True})
            done.append(f"took {self.made['handoff']}")
        if "session" in self.made and "session_close" in self.expected:
            await self.call("session_close", {"session_id": self.made["session"]})
            done.append(f"closed session {self.made['session']}")
        return {"retired": done}


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _error_of(err: ToolError) -> dict[str, Any]:
    """memhub's error code and message from a tool error (docs/failure-modes.md)."""
    try:
        body = json.loads(str(err))
    except ValueError:
        return {"message": str(err)[:MESSAGE_CHARS]}
    if not isinstance(body, dict):
        return {"message": str(err)[:MESSAGE_CHARS]}
    return {"code": body.get("code"), "message": str(body.get("message"))[:MESSAGE_CHARS]}
