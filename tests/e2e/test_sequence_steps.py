"""The sequence tools report the steps the server ran (steps_run), as session_bootstrap does:
recall (search, then the retrieval guard) and namespace_init (which database answered, then
the profile written); a refused write is still the call's error, with nothing written."""

from __future__ import annotations

from tests.conftest import WEB_TOKEN
from tests.support.db import insert_token
from tests.support.mcp import call, error_of

NS = "acme"


def steps(answer: dict) -> list[tuple[str, str]]:
    assert all(s["ms"] >= 0 for s in answer["steps_run"])
    return [(s["step"], s["status"]) for s in answer["steps_run"]]


async def test_recall_reports_its_search_and_its_guard(server):
    async with server.client(WEB_TOKEN) as web:
        await call(web, "memory_remember", {"namespace": NS, "content":
                                            "Webhook deliveries are signed with HMAC-SHA256"})
        found = await call(web, "recall", {"namespace": NS,
                                           "query": "how are webhook deliveries signed"})
        nothing = await call(web, "recall", {"namespace": NS, "query": "zebra migration"})
    assert found["answered"] and not nothing["answered"]
    for answer in (found, nothing):
        # The model may still be loading: the search then says so (degraded), and still ran.
        assert [step for step, _ in steps(answer)] == ["search", "guard"]
        assert steps(answer)[1] == ("guard", "ok")
        search = answer["steps_run"][0]
        assert (search["status"] == "degraded") == bool(answer.get("degraded"))


async def test_namespace_init_reports_the_database_then_the_profile(server):
    async with server.client(WEB_TOKEN) as web:
        made = await call(web, "namespace_init", {"namespace": NS, "profile": {}})
        boot = await call(web, "session_bootstrap", {"namespace": NS})
    assert made["outcome"] == "created"
    assert steps(made) == [("database", "ok"), ("profile", "ok")]
    assert made["database"]["instance_id"] == boot["database"]["instance_id"]


async def test_a_refused_namespace_init_is_the_calls_error_and_writes_nothing(server, db_dsn):
    reader = insert_token(db_dsn, "cursor", read_only=True)
    async with server.client(WEB_TOKEN) as web, server.client(reader) as read_only:
        bad = await error_of(web, "namespace_init", {"namespace": NS,
                                                     "profile": {"colour": "blue"}})
        refused = await error_of(read_only, "namespace_init", {"namespace": NS, "profile": {}})
        now = await call(web, "namespace_profile", {"namespace": NS})
    assert (bad["code"], refused["code"]) == ("INVALID_INPUT", "FORBIDDEN")
    assert now["initialised"] is False
