"""`as_of` through the real MCP endpoint: two surfaces write, revise, supersede and forget a
decision; memory_search, memory_list, memory_get and memory_context then answer as the project
stood at each instant between, say so (`as_of`, `current_now: false`), and the present reads
still never return a retired memory."""

from __future__ import annotations

from datetime import datetime, timedelta

from memhub.storage.sanitize import unwrap_untrusted
from tests.support import db
from tests.support.mcp import call, error_of

NS = "acme"
TICK = timedelta(microseconds=1)


def text_of(hit: dict) -> str:
    return unwrap_untrusted(hit["text"])


def between(a: str, b: str) -> str:
    start, end = datetime.fromisoformat(a), datetime.fromisoformat(b)
    return (start + (end - start) / 2).isoformat()


async def test_a_decision_read_as_of_each_instant_of_its_life(server, tokens):
    async with server.client(tokens["desktop-cli"]) as desktop, \
            server.client(tokens["cursor"]) as cursor:
        made = (await call(desktop, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "key": "queue",
            "content": "The job queue runs on Redis"}))["memory"]
        await call(cursor, "memory_revise", {"namespace": NS, "id": made["id"],
                                             "expected_revision": 1,
                                             "content": "The job queue runs on Redis 7"})
        moved = (await call(cursor, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "key": "queue", "supersedes": [made["id"]],
            "content": "The job queue runs on PostgreSQL with SKIP LOCKED"}))["memory"]
        await call(desktop, "memory_forget", {"namespace": NS, "id": moved["id"],
                                              "reason": "the queue decision is reopened"})
        history = await call(cursor, "memory_history", {"namespace": NS, "id": made["id"]})
        gone = await call(cursor, "memory_history", {"namespace": NS, "id": moved["id"]})
        rev1, rev2 = (r["created_at"] for r in history["revisions"])
        assert history["retired_at"] == moved["created_at"]
        forgot = gone["retired_at"]

        async def search(at: str | None) -> dict:
            args = {"namespace": NS, "query": "job queue", "mode": "lexical"}
            return await call(cursor, "memory_search", {**args, "as_of": at} if at else args)

        before = datetime.fromisoformat(rev1) - TICK
        assert (await search(before.isoformat()))["results"] == []
        first = await search(between(rev1, rev2))
        assert [(h["id"], h["revision"], text_of(h), h["current_now"])
                for h in first["results"]] == [
            (made["id"], 1, "The job queue runs on Redis", False)]
        assert first["as_of"] == between(rev1, rev2)
        second = await search(between(rev2, moved["created_at"]))
        assert [(h["id"], h["revision"]) for h in second["results"]] == [(made["id"], 2)]
        third = await search(between(moved["created_at"], forgot))
        assert [(h["id"], text_of(h)) for h in third["results"]] == [
            (moved["id"], "The job queue runs on PostgreSQL with SKIP LOCKED")]
        assert (await search(forgot))["results"] == []
        assert (await search(None))["results"] == []  # the present: nothing comes back

        at = between(moved["created_at"], forgot)
        listed = await call(desktop, "memory_list", {"namespace": NS, "as_of": at})
        assert [m["id"] for m in listed["memories"]] == [moved["id"]]
        assert listed["as_of"] == at and listed["memories"][0]["current_now"] is False
        old = await call(desktop, "memory_get", {"namespace": NS, "id": made["id"],
                                                 "as_of": at})
        assert (old["memory"]["status"], old["memory"]["revision"],
                old["memory"]["superseded_by"]) == ("SUPERSEDED", 2, moved["id"])
        held = await call(desktop, "memory_get", {"namespace": NS, "key": "queue",
                                                  "as_of": between(rev2, moved["created_at"])})
        assert held["memory"]["id"] == made["id"]
        packed = await call(desktop, "memory_context", {"namespace": NS, "as_of": at})
        assert [(m["id"], m["current_now"]) for m in packed["memories"]] == [
            (moved["id"], False)]
        assert packed["as_of"] == at


async def test_as_of_is_bounded_and_checked_before_any_read(server, tokens):
    async with server.client(tokens["cursor"]) as cursor:
        mid = (await call(cursor, "memory_remember", {"namespace": NS,
                                                      "content": "a note"}))["memory"]["id"]
        later = (datetime.now().astimezone() + timedelta(days=1)).isoformat()
        for tool, args in (("memory_search", {"query": "note"}), ("memory_list", {}),
                           ("memory_get", {"id": mid}), ("memory_context", {})):
            for bad in (later, "2026-01-31T12:00:00", "last tuesday", "9" * 100):
                err = await error_of(cursor, tool, {"namespace": NS, **args, "as_of": bad})
                assert err["code"] == "INVALID_INPUT" and err["details"]["field"] == "as_of"
                assert err["remedy"]
        past = datetime.now().astimezone().isoformat()
        err = await error_of(cursor, "memory_list", {"namespace": NS, "status": "DELETED",
                                                     "as_of": past})
        assert err["code"] == "INVALID_INPUT" and err["details"]["field"] == "status"


async def test_as_of_reads_only_the_namespaces_of_the_token(server, tokens, db_dsn):
    outsider = db.insert_token(db_dsn, "cursor", namespaces=["elsewhere"])
    async with server.client(tokens["cursor"]) as cursor, server.client(outsider) as other:
        made = (await call(cursor, "memory_remember", {"namespace": NS,
                                                       "content": "a private note"}))["memory"]
        at = made["created_at"]
        for tool, args in (("memory_search", {"query": "private note"}), ("memory_list", {}),
                           ("memory_get", {"id": made["id"]}), ("memory_context", {})):
            err = await error_of(other, tool, {"namespace": NS, **args, "as_of": at})
            assert err["code"] == "FORBIDDEN"
            mine = await call(other, tool, {"namespace": "elsewhere", **args, "as_of": at}) \
                if tool != "memory_get" else None
            assert mine is None or not (mine.get("results") or mine.get("memories"))
