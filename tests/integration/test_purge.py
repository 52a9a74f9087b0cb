"""memhub-admin purge, end to end: a memory that held a secret was written with a request id,
revised, corroborated, embedded, searched, superseded twice and analyzed by the planner; after
the purge the secret is nowhere in the database, its statistics or a dump of it, while the
same kinds of rows of other memories and namespaces are untouched."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import psycopg

from tests.conftest import WEB_TOKEN
from tests.integration.test_admin_cli import cli, ok_json
from tests.support import residue
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.wait import until_sync

NS, OTHER = "acme", "other-team"


def secret() -> str:
    return "zkq" + uuid.uuid4().hex[:16]  # one word, lower case: as the tsvectors keep it


def wait_for_vector(dsn: str, memory_id: str, revision: int, timeout: float = 90.0) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        def embedded() -> bool:
            row = conn.execute("SELECT revision FROM memory_embeddings WHERE memory_id = %s",
                               [memory_id]).fetchone()
            return bool(row and row[0] >= revision)

        until_sync(embedded, timeout=timeout,
                   what=f"memory {memory_id} embedded at revision {revision}")


async def test_a_purged_memory_leaves_its_secret_nowhere_in_the_database_or_its_dump(
    server, db_dsn
):
    leaked, kept_here, kept_there = secret(), secret(), secret()
    cursor = insert_token(db_dsn, "cursor")
    async with server.client(WEB_TOKEN) as web, server.client(cursor) as other:
        older = (await call(web, "memory_remember", {
            "namespace": NS, "title": "Staging database",
            "content": "Staging uses the shared development password"}))["memory"]
        text = f"The staging database password is {leaked} until the vault migration"
        leak = (await call(web, "memory_remember", {
            "namespace": NS, "title": f"Staging credentials {leaked}", "content": text,
            "tags": ["credentials"], "supersedes": [older["id"]],
            "client_request_id": "req-remember"}))["memory"]
        wait_for_vector(db_dsn, leak["id"], 1)
        await call(web, "memory_revise", {
            "namespace": NS, "id": leak["id"], "expected_revision": 1,
            "content": text + " (rotated monthly)", "client_request_id": "req-revise"})
        wait_for_vector(db_dsn, leak["id"], 2)
        corroborated = await call(other, "memory_remember", {
            "namespace": NS, "title": f"Staging credentials {leaked}",
            "content": text + " (rotated monthly)", "client_request_id": "req-dedup"})
        assert corroborated["outcome"] == "deduplicated"
        await call(web, "memory_verify", {"namespace": NS, "id": leak["id"],
                                          "client_request_id": "req-verify"})
        await call(other, "observation_log", {
            "namespace": NS, "kind": "stale", "text": f"{leaked} was rotated last week",
            "refs": [leak["id"]], "client_request_id": "req-observe"})
        for query in (leaked, "staging database password"):
            assert (await call(web, "memory_search", {"namespace": NS, "query": query}))[
                "results"]
            await call(web, "memory_context", {"namespace": NS, "query": query})
        successor = (await call(web, "memory_remember", {
            "namespace": NS, "content": "Staging credentials now live in the vault",
            "supersedes": [leak["id"]], "client_request_id": "req-supersede"}))["memory"]
        latest = (await call(web, "memory_remember", {
            "namespace": NS, "content": "Credentials: read them from vault path ops/staging",
            "supersedes": [successor["id"]]}))["memory"]
        assert (await call(web, "memory_search", {"namespace": NS, "query": leaked}))[
            "results"][0]["id"] == latest["id"]  # through the lineage
        await call(web, "memory_remember", {"namespace": NS, "content": f"Keep {kept_here}"})
        await call(web, "memory_remember", {"namespace": OTHER,
                                            "content": f"The staging password is {kept_there}"})
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")  # the planner's samples now hold the secret too

        before = residue.everywhere(db_dsn, leaked)
        assert {"public.memories.content", "public.memories.lineage",
                "public.memories.search_tsv", "public.memory_revisions.content",
                "public.idempotency_keys.response", "pg_statistic", "pg_dump"} <= set(before)

        purged = ok_json(cli(db_dsn, "purge", "memory", leak["id"], "--reason",
                             "credential pasted by mistake", "--yes", "--json"))

        assert residue.everywhere(db_dsn, leaked) == {}
        assert residue.everywhere(db_dsn, kept_here) != {}
        assert "public.memories.content" in residue.everywhere(db_dsn, kept_there)
        assert purged["removed"]["memory_revisions"] == 2
        assert purged["removed"]["memory_embeddings"] == 1
        assert purged["removed"]["memory_corroborations"] == 1
        # remember, revise, dedup, supersede, verify, observe
        assert purged["removed"]["idempotency_keys"] == 6
        with psycopg.connect(db_dsn) as conn:
            assert conn.execute(
                "SELECT (SELECT count(*) FROM memory_verifications WHERE memory_id = %(id)s)"
                "     + (SELECT count(*) FROM memory_observations WHERE %(id)s = ANY (refs))",
                {"id": leak["id"]}).fetchone()[0] == 0
        assert purged["not_reclaimed"] == []

        # What replaced it still answers for the words it keeps, and nothing resurfaces.
        assert (await call(web, "memory_search", {"namespace": NS, "query": leaked,
                                                  "mode": "lexical"}))["results"] == []
        found = await call(web, "memory_search", {"namespace": NS,
                                                  "query": "shared development password"})
        assert found["results"][0]["id"] == latest["id"]
        history = await call(web, "memory_history", {"namespace": NS, "id": older["id"]})
        assert history["superseded_by"] == successor["id"]
        gone = await error_of(web, "memory_get", {"namespace": NS, "id": leak["id"]})
        assert gone["code"] == "NOT_FOUND"
        assert (datetime.fromisoformat(gone["details"]["purged_at"])
                == datetime.fromisoformat(purged["purged_at"]))


def test_the_tombstone_and_the_audit_say_who_when_and_why_but_not_what(db_dsn, db_conn):
    leaked = secret()
    memory_id = _seed_memory(db_conn, f"token {leaked}")
    purged = ok_json(cli(db_dsn, "purge", "memory", memory_id, "--reason", "pasted a token",
                         "--yes", "--json"))
    namespace, kind, target, reason, actor, digest = db_conn.execute(
        "SELECT namespace, kind, target, reason, actor, content_sha256"
        " FROM purge_tombstones WHERE id = %s", [purged["tombstone_id"]]).fetchone()
    assert (namespace, kind, target, reason) == (NS, "memory", memory_id, "pasted a token")
    assert actor.startswith("cli:") and len(bytes(digest)) == 32
    audit = db_conn.execute("SELECT actor, action, detail::text FROM admin_audit"
                            " WHERE action = 'purge.memory'").fetchall()
    assert len(audit) == 1 and audit[0][0] == actor
    detail = json.loads(audit[0][2])
    assert detail["reason"] == "pasted a token" and detail["target"] == memory_id
    assert leaked not in audit[0][2]
    assert residue.columns_holding(db_dsn, leaked) == {}


def _seed_memory(conn: psycopg.Connection, content: str, namespace: str = NS) -> str:
    """A memory at revision 1, written straight to the database (owner, one transaction)."""
    memory_id = str(uuid.uuid4())
    with conn.transaction():
        conn.execute("INSERT INTO memories (id, namespace, kind, content, content_hash,"
                     " author_client) VALUES (%s, %s, 'NOTE', %s, sha256(convert_to(%s,"
                     " 'UTF8')), 'web')", [memory_id, namespace, content, content])
        conn.execute("INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
                     " author_client) VALUES (%s, %s, 1, %s, 'web')",
                     [memory_id, namespace, content])
    return memory_id


# --- the command line ------------------------------------------------------------------------
def test_purge_refuses_without_a_reason_and_removes_nothing(db_dsn, db_conn):
    memory_id = _seed_memory(db_conn, "kept")
    for reason in ([], ["--reason", "   "], ["--reason", "x" * 501]):
        result = cli(db_dsn, "purge", "memory", memory_id, *reason, "--yes", "--json")
        assert result.returncode == 2, result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)


def test_purge_without_yes_and_without_a_terminal_refuses(db_dsn, db_conn):
    memory_id = _seed_memory(db_conn, "kept")
    result = cli(db_dsn, "purge", "memory", memory_id, "--reason", "r", "--json")
    assert result.returncode == 2 and "--yes" in result.stderr
    assert json.loads(result.stdout)["error"]["code"] == "CONFIRMATION_REQUIRED"
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)


def test_purge_asks_and_honours_the_answer(db_dsn, db_conn):
    memory_id = _seed_memory(db_conn, "asked about")
    declined = cli(db_dsn, "purge", "memory", memory_id, "--reason", "r", stdin="n\n")
    assert declined.returncode == 3 and "for good" in declined.stderr
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    accepted = cli(db_dsn, "purge", "memory", memory_id, "--reason", "r", stdin="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_purging_what_is_not_there_exits_1_not_found_and_says_when_it_was_purged(db_dsn,
                                                                                db_conn):
    memory_id = _seed_memory(db_conn, "once")
    unknown = cli(db_dsn, "purge", "memory", str(uuid.uuid4()), "--reason", "r", "--yes",
                  "--json")
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["error"]["code"] == "NOT_FOUND"
    ok_json(cli(db_dsn, "purge", "memory", memory_id, "--reason", "r", "--yes", "--json"))
    again = cli(db_dsn, "purge", "memory", memory_id, "--reason", "r", "--yes", "--json")
    assert again.returncode == 1 and "purged before" in again.stderr


def test_purge_refuses_a_malformed_id_before_asking(db_dsn):
    for kind, target in (("memory", "not-a-uuid"), ("artifact", "abc"),
                         ("namespace", "Bad Name")):
        result = cli(db_dsn, "purge", kind, target, "--reason", "r", "--json")
        assert result.returncode == 2
        assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"
