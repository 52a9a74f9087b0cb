"""session_bootstrap through the real /mcp endpoint: every step in order, each reported, a
failing step degrading only itself, the answer within its budget, the session idempotent."""

from __future__ import annotations

import uuid

import psycopg

from memhub.storage.context_pack import count_tokens, dumps
from memhub.storage.postgres.migrate import migration_files
from memhub.storage.sanitize import unwrap_untrusted
from memhub.usecases.bootstrap import STEPS
from tests.support.db import insert_token
from tests.support.mcp import call, error_of

NS = "acme"


async def _bootstrap(client, **args):
    return await call(client, "session_bootstrap", {"namespace": NS, **args})


def _status(answer) -> dict[str, str]:
    return {s["step"]: s["status"] for s in answer["steps_run"]}


async def test_every_step_runs_in_order_and_reports_itself(server, tokens):
    async with server.client(tokens["web"]) as web:
        await call(web, "memory_remember", {"namespace": NS, "kind": "DECISION",
                                            "content": "We use PostgreSQL for billing."})
        answer = await _bootstrap(web, query="which database does billing use")
    assert [s["step"] for s in answer["steps_run"]] == list(STEPS)
    assert set(_status(answer).values()) == {"ok"}, answer["steps_run"]
    assert all(s["ms"] >= 0 for s in answer["steps_run"])
    database = answer["database"]
    uuid.UUID(database["instance_id"])
    assert database["migration_level"] == migration_files()[-1][0]
    assert database["embedded"] is False  # the suite's server is given a DATABASE_URL
    assert answer["profile"]["initialised"] is False
    assert "PostgreSQL for billing" in answer["context"]["memories"][0]["text"]
    session_id = answer["session"]["id"]
    async with server.client(tokens["web"]) as web:
        got = await call(web, "session_get", {"namespace": NS, "session_id": session_id})
    assert unwrap_untrusted(got["session"]["title"]) == "web session"


async def test_a_query_nothing_matches_still_gets_the_newest_memories_labelled(server, tokens):
    async with server.client(tokens["web"]) as web:
        await call(web, "memory_remember", {"namespace": NS, "kind": "DECISION",
                                            "content": "We use PostgreSQL for billing."})
        matched = await _bootstrap(web, query="which database does billing use")
        unmatched = await _bootstrap(web, query="xylophone tuning schedule for orchestras")
    assert "query_matched" not in matched["context"]
    assert unmatched["context"]["query_matched"] is False
    assert "PostgreSQL for billing" in unmatched["context"]["memories"][0]["text"]


async def test_two_surfaces_learn_they_share_one_memory(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        a = await _bootstrap(web)
        b = await _bootstrap(cursor)
    assert a["database"]["instance_id"] == b["database"]["instance_id"]
    assert a["database"]["migration_level"] == b["database"]["migration_level"]


async def test_open_handoffs_for_this_surface_or_anyone_are_peeked_never_taken(server, tokens):
    async with server.client(tokens["web"]) as web:
        for title, target in [("for cursor", "cursor"), ("for anyone", None),
                              ("for desktop", "desktop-cli")]:
            await call(web, "handoff_save", {"namespace": NS, "title": title, "body": "b" * 900,
                                             "for_surface": target})
    async with server.client(tokens["cursor"]) as cursor:
        answer = await _bootstrap(cursor)
        still_open = await call(cursor, "handoff_list", {"namespace": NS, "status": "open"})
    shown = answer["handoffs"]
    titles = sorted(unwrap_untrusted(h["title"]) for h in shown["handoffs"])
    assert shown["total"] == 2
    assert titles == ["for anyone", "for cursor"]
    assert all(h["body_chars"] == 900 and len(h["body_preview"]) < 900
               for h in shown["handoffs"])
    assert len(still_open["handoffs"]) == 3  # peeked: nothing was taken


async def test_changes_are_reported_since_this_tokens_last_bootstrap(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        first = await _bootstrap(web)
        assert first["changes"]["first_bootstrap"] is True
        written = await call(cursor, "memory_remember", {"namespace": NS, "kind": "FACT",
                                                         "content": "The API runs on port 8080."})
        await call(cursor, "memory_forget", {"namespace": NS, "id": written["memory"]["id"],
                                             "reason": "wrong port"})
        second = await _bootstrap(web)
        third = await _bootstrap(web)
    changes = second["changes"]
    assert changes["first_bootstrap"] is False and changes["has_more"] is False
    assert sum(changes["counts"].values()) == 2, changes
    assert {c["target_id"] for c in changes["recent"]} == {written["memory"]["id"]}
    assert all(c["surface"] == "cursor" for c in changes["recent"])
    assert third["changes"]["counts"] == {}  # the second bootstrap moved the mark


async def test_a_first_bootstrap_says_so_and_summarises_what_is_there(server, tokens):
    async with server.client(tokens["cursor"]) as cursor:
        facts = [(await call(cursor, "memory_remember", {
            "namespace": NS, "kind": "FACT",
            "content": f"Service {i} listens on port {8080 + i}."}))["memory"] for i in range(4)]
        await call(cursor, "memory_remember", {"namespace": NS, "kind": "DECISION",
                                               "content": "Billing runs on PostgreSQL."})
        await call(cursor, "memory_revise", {"namespace": NS, "id": facts[0]["id"],
                                             "expected_revision": 1,
                                             "content": "Service 0 listens on port 9000."})
        await call(cursor, "memory_forget", {"namespace": NS, "id": facts[1]["id"],
                                             "reason": "gone"})
        for i in range(3):
            await call(cursor, "handoff_save", {"namespace": NS, "title": f"h{i}", "body": "b"})
        newest = await call(cursor, "memory_remember", {"namespace": NS, "kind": "NOTE",
                                                        "content": "Deploys on Tuesdays."})
    async with server.client(tokens["web"]) as web:
        first = await _bootstrap(web)
        tight = await _bootstrap(web, budget_tokens=800)  # a later bootstrap: nothing new
        async with server.client(tokens["desktop-cli"]) as desktop:
            small = await _bootstrap(desktop, budget_tokens=800)
    changes = first["changes"]
    assert changes["first_bootstrap"] is True and changes["has_more"] is False
    assert changes["counts"] == {"created": 6, "revised": 1, "forgotten": 1, "saved": 3}
    assert changes["active_memories"] == {"DECISION": 1, "FACT": 3, "NOTE": 1}
    assert 0 < len(changes["recent"]) <= 10
    assert changes["recent"][-1]["target_id"] == newest["memory"]["id"]  # newest last
    ids = [c["change_id"] for c in changes["recent"]]
    assert ids == sorted(ids)
    assert first["handoffs"]["total"] == 3
    # The mark starts where the summary ended: the next bootstrap reports nothing again.
    assert tight["changes"]["first_bootstrap"] is False and tight["changes"]["counts"] == {}
    # Within the smallest budget the summary's counts stay; its entries are what is trimmed.
    assert count_tokens(dumps(small)) <= 800
    assert small["changes"]["counts"] == changes["counts"]
    assert small["changes"]["active_memories"] == changes["active_memories"]


async def test_a_mark_retention_went_past_starts_again_as_a_first_bootstrap(
        server, tokens, db_dsn):
    async with server.client(tokens["web"]) as web:
        await _bootstrap(web)
        await call(web, "memory_remember", {"namespace": NS, "content": "Deploys on Fridays."})
        with psycopg.connect(db_dsn, autocommit=True) as conn:  # what gc's trim records
            conn.execute("INSERT INTO change_feed_trimmed (namespace, through_xid, through_id)"
                         " SELECT namespace, xid, id FROM change_feed WHERE namespace = %s"
                         " ORDER BY xid DESC, id DESC LIMIT 1", [NS])
        expired = await _bootstrap(web)
        after = await _bootstrap(web)
    assert _status(expired)["changes"] == "ok" and _status(expired)["mark"] == "ok"
    assert expired["changes"]["first_bootstrap"] is True
    assert expired["changes"]["mark_expired"] is True
    assert _status(after)["changes"] == "ok" and after["changes"]["first_bootstrap"] is False


async def test_a_retry_with_the_same_request_id_returns_the_same_session(server, tokens):
    async with server.client(tokens["web"]) as web:
        a = await _bootstrap(web, client_request_id="boot-1", title="fix the login bug")
        b = await _bootstrap(web, client_request_id="boot-1", title="fix the login bug")
    assert a["session"]["outcome"] == "created" and b["session"]["outcome"] == "replayed"
    assert a["session"]["id"] == b["session"]["id"]


async def test_the_answer_fits_its_budget(server, tokens):
    async with server.client(tokens["web"]) as web:
        for i in range(40):
            await call(web, "memory_remember", {
                "namespace": NS, "kind": "DECISION",
                "content": f"Decision {i}: the billing service retries webhooks {i} times "
                           "with exponential backoff and jitter before giving up."})
            await call(web, "handoff_save", {"namespace": NS, "title": f"handoff {i}",
                                             "body": "x " * 400})
        for budget in (800, 1200, 2000):
            answer = await _bootstrap(web, query="billing webhook retries",
                                      budget_tokens=budget)
            assert count_tokens(dumps(answer)) <= budget, (budget, answer["tokens_used"])
            assert answer["tokens_used"] <= budget
            # Memories first, diagnostics last: the lists gave way before the memories.
            assert answer["context"] and answer["context"]["memories"], (
                budget, answer["steps_run"])
            assert len(answer["handoffs"]["handoffs"]) < 5
        big = await _bootstrap(web, query="billing webhook retries", budget_tokens=6000)
    assert len(big["context"]["memories"]) > 5  # what the budget allows is used
    assert _status(big)["context"] == "ok"


async def test_a_failing_step_degrades_that_step_only(server, tokens, db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("REVOKE SELECT ON memhub_instance FROM memhub_app")
    try:
        async with server.client(tokens["web"]) as web:
            answer = await _bootstrap(web)
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("GRANT SELECT ON memhub_instance TO memhub_app")
    status = _status(answer)
    assert status["database"] == "degraded"
    assert answer["steps_run"][0]["error"]["code"]
    assert answer["database"] is None
    assert {k: v for k, v in status.items() if k != "database"} == {
        k: "ok" for k in STEPS if k != "database"}
    assert answer["session"]["id"]


async def test_a_read_only_token_reads_everything_but_opens_no_session(server, db_dsn):
    reader = insert_token(db_dsn, "cursor", namespaces=[NS], read_only=True)
    async with server.client(reader) as client:
        answer = await _bootstrap(client)
    status = _status(answer)
    assert status["session"] == "skipped" and status["mark"] == "skipped"
    assert answer["session"] is None
    assert {k for k, v in status.items() if v == "ok"} == set(STEPS) - {"session", "mark"}


async def test_a_token_scoped_elsewhere_is_refused_before_any_step(server, db_dsn):
    other = insert_token(db_dsn, "cursor", namespaces=["other"])
    async with server.client(other) as client:
        err = await error_of(client, "session_bootstrap", {"namespace": NS})
    assert err["code"] == "FORBIDDEN"


async def test_bad_arguments_are_refused_with_the_field(server, tokens):
    async with server.client(tokens["web"]) as web:
        small = await error_of(web, "session_bootstrap", {"namespace": NS, "budget_tokens": 10})
        long_title = await error_of(web, "session_bootstrap", {"namespace": NS,
                                                               "title": "t" * 301})
    assert small["code"] == "INVALID_INPUT" and small["details"]["field"] == "budget_tokens"
    assert long_title["code"] in {"INVALID_INPUT", "TOO_LARGE"}
