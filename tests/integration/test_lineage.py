"""A replacement is found by the words of what it replaced (migration 0017): a query in a
retired decision's words returns its live successor, never the retired memory itself.

Mutation checks (docs/failure-modes.md): the insert without `lineage` -> the search tests
fail; the lineage trigger dropped -> the immutability test fails."""

from __future__ import annotations

import psycopg
import pytest

from tests.support.retrieval import WRITER, open_backend, owner_execute

NS = "lineage"
ROLLBAR = ("Unhandled exceptions are reported to Rollbar with the environment and service "
           "name as tags.")
SENTRY = "Error tracking switched to Sentry SaaS in the EU data region; PII is scrubbed."
GLITCHTIP = "Error tracking now runs on self-hosted GlitchTip behind the VPN."


async def _ids(backend, query, mode):
    found = await backend.search(WRITER, NS, query, mode=mode)
    return [r["memory"]["id"] for r in found["results"]], found["results"]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
async def test_a_query_in_the_replaced_words_finds_the_replacement_only(settings, mode):
    async with open_backend(settings, None) as backend:
        old = await backend.remember(WRITER, NS, kind="DECISION", title="Error tracking with "
                                     "Rollbar", content=ROLLBAR)
        new = await backend.remember(WRITER, NS, kind="DECISION", title="Sentry for errors",
                                     content=SENTRY, supersedes=[old["memory"]["id"]])
        ids, results = await _ids(backend, "Rollbar exception reporting", mode)
        got = await backend.get_memory(WRITER, NS, memory_id=new["memory"]["id"])
    assert ids == [new["memory"]["id"]]
    assert all(r["memory"]["status"] == "ACTIVE" for r in results)
    # The replaced text is an index entry, never part of an answer.
    assert "lineage" not in got and "Rollbar" not in str(got)


async def test_a_chain_keeps_its_oldest_words_and_answers_with_its_newest(settings):
    async with open_backend(settings, None) as backend:
        a = await backend.remember(WRITER, NS, kind="DECISION", title="Rollbar", content=ROLLBAR)
        b = await backend.remember(WRITER, NS, kind="DECISION", title="Sentry", content=SENTRY,
                                   supersedes=[a["memory"]["id"]])
        c = await backend.remember(WRITER, NS, kind="DECISION", title="GlitchTip",
                                   content=GLITCHTIP, supersedes=[b["memory"]["id"]])
        rollbar, _ = await _ids(backend, "Rollbar", "lexical")
        sentry, _ = await _ids(backend, "Sentry EU region", "lexical")
        context = await backend.context(WRITER, NS, "Rollbar exceptions")
    assert rollbar == sentry == [c["memory"]["id"]]
    assert [m["id"] for m in context["memories"]] == [c["memory"]["id"]]


async def test_a_memory_that_replaces_nothing_has_no_lineage_and_a_long_one_is_capped(settings):
    dsn = settings.database_url.get_secret_value()
    async with open_backend(settings, None) as backend:
        plain = await backend.remember(WRITER, NS, content="Deploys go out on Tuesdays.")
        olds = [await backend.remember(WRITER, NS, content=f"{i} " + "word " * 1500)
                for i in range(3)]
        big = await backend.remember(WRITER, NS, content="One memory replaces three.",
                                     supersedes=[o["memory"]["id"] for o in olds])
    rows = dict(owner_execute(dsn, "SELECT id::text, char_length(lineage) FROM memories "
                                   "WHERE id::text = ANY (%s)",
                              [[plain["memory"]["id"], big["memory"]["id"]]]))
    assert rows == {plain["memory"]["id"]: None, big["memory"]["id"]: 8000}


async def test_the_database_refuses_to_change_a_lineage(settings):
    dsn = settings.database_url.get_secret_value()
    async with open_backend(settings, None) as backend:
        old = await backend.remember(WRITER, NS, content=ROLLBAR)
        new = await backend.remember(WRITER, NS, content=SENTRY, supersedes=[old["memory"]["id"]])
    for value in ("something else", None):
        with pytest.raises(psycopg.errors.CheckViolation):
            owner_execute(dsn, "UPDATE memories SET lineage = %s WHERE id = %s",
                          [value, new["memory"]["id"]])
