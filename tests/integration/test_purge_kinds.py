"""What each kind of purge removes, and what it leaves: a memory's place in its supersession
chain, handoffs, sessions, artifacts shared between namespaces, and whole namespaces."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

import psycopg
import pytest

from memhub.errors import NotFound
from memhub.storage.admin import Actor
from memhub.storage.postgres.operator.purge import PostgresPurge
from memhub.storage.postgres.retrieval import lexicon
from memhub.storage.purge import check_target
from tests.integration.test_admin_cli import cli, ok_json
from tests.support import residue
from tests.support.db import insert_token
from tests.support.memories import CURSOR, DESKTOP, NS, open_backend

OTHER = "other-ns"
OPERATOR = Actor("cli:test", "local")


async def purge(dsn: str, kind: str, target: str, namespace: str | None = None) -> dict:
    return await PostgresPurge(dsn).purge(check_target(kind, target, namespace),
                                          reason="test", actor=OPERATOR)


def lineage_of(conn: psycopg.Connection, memory_id: str) -> str | None:
    return conn.execute("SELECT lineage FROM memories WHERE id = %s", [memory_id]).fetchone()[0]


async def test_purging_a_replaced_memory_relinks_what_it_replaced_and_rewrites_the_chain(
    db_dsn, db_conn, tmp_path
):
    async with open_backend(db_dsn, tmp_path) as b:
        first = (await b.remember(DESKTOP, NS, title="Queue", content="Jobs run on Redis"))
        middle = await b.remember(DESKTOP, NS, title="Queue", content="Jobs run on RabbitMQ",
                                  supersedes=[first["memory"]["id"]])
        last = await b.remember(DESKTOP, NS, content="Jobs run on PostgreSQL",
                                supersedes=[middle["memory"]["id"]])
        newest = await b.remember(DESKTOP, NS, content="Jobs run on SKIP LOCKED queues",
                                  supersedes=[last["memory"]["id"]])
        first_id, last_id = first["memory"]["id"], last["memory"]["id"]
        assert "RabbitMQ" in lineage_of(db_conn, newest["memory"]["id"])

        answer = await purge(db_dsn, "memory", middle["memory"]["id"])

        assert (answer["predecessors_relinked"], answer["successors_rederived"]) == (1, 2)
        history = await b.memory_history(DESKTOP, NS, first_id)
        assert history["superseded_by"] == last_id and history["status"] == "SUPERSEDED"
        # Derived again by the rule that wrote it (memories.sql insert_memory).
        assert lineage_of(db_conn, last_id) == "Queue Jobs run on Redis"
        assert lineage_of(db_conn, newest["memory"]["id"]) == (
            "Jobs run on PostgreSQL Queue Jobs run on Redis")
        found = await b.search(DESKTOP, NS, "Redis", mode="lexical")
        assert [r["memory"]["id"] for r in found["results"]] == [newest["memory"]["id"]]
        assert residue.columns_holding(db_dsn, "RabbitMQ") == {}


async def test_purging_the_current_memory_retires_what_it_replaced_for_good(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        old = (await b.remember(DESKTOP, NS, content="Deploys go out on Fridays"))["memory"]
        new = (await b.remember(DESKTOP, NS, content="Deploys never go out on Fridays",
                                supersedes=[old["id"]]))["memory"]
        answer = await purge(db_dsn, "memory", new["id"])
        assert answer["predecessors_retired"] == 1
        retired = (await b.get_memory(DESKTOP, NS, memory_id=old["id"]))["memory"]
        assert retired["status"] == "DELETED" and retired["superseded_by"] is None
        assert (await b.search(DESKTOP, NS, "Fridays", mode="lexical"))["results"] == []
        assert (await b.list_memories(DESKTOP, NS))["memories"] == []


async def test_a_purged_memory_reads_as_not_found_with_when_only_in_its_own_namespace(
    db_dsn, tmp_path
):
    async with open_backend(db_dsn, tmp_path) as b:
        memory = (await b.remember(DESKTOP, NS, content="to be purged"))["memory"]
        answer = await purge(db_dsn, "memory", memory["id"])
        for read in (b.get_memory(DESKTOP, NS, memory_id=memory["id"]),
                     b.memory_history(DESKTOP, NS, memory["id"])):
            with pytest.raises(NotFound) as err:
                await read
            # Compared as times: PostgreSQL's text drops a trailing zero of the microseconds.
            assert datetime.fromisoformat(err.value.details["purged_at"]) == \
                datetime.fromisoformat(answer["purged_at"].replace(" ", "T"))
        with pytest.raises(NotFound) as err:
            await b.get_memory(DESKTOP, OTHER, memory_id=memory["id"])
        assert err.value.details == {}


async def test_purging_a_handoff_removes_it_and_the_answer_stored_for_its_request(
    db_dsn, db_conn, tmp_path
):
    async with open_backend(db_dsn, tmp_path) as b:
        saved = await b.handoff_save(DESKTOP, NS, title="Next", body="call 555-0199 zzhandoff",
                                     client_request_id="h-1")
        kept = await b.handoff_save(DESKTOP, NS, title="Other", body="unrelated")
        await purge(db_dsn, "handoff", saved["handoff"]["id"])
        assert residue.columns_holding(db_dsn, "zzhandoff") == {}
        listed = await b.handoff_list(DESKTOP, NS)
        assert [h["id"] for h in listed["handoffs"]] == [kept["handoff"]["id"]]
        again = await b.handoff_save(DESKTOP, NS, title="Next", body="call 555-0199 zzhandoff",
                                     client_request_id="h-1")
        assert again["outcome"] == "created"  # the stored answer went with it


async def test_purging_a_session_removes_every_event(db_dsn, db_conn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        session = (await b.session_create(DESKTOP, NS, title="Debugging"))["session"]
        for step in range(3):
            await b.session_append(DESKTOP, NS, session_id=session["id"], type="step",
                                   payload={"note": f"zzsession step {step}"})
        answer = await purge(db_dsn, "session", session["id"])
        assert answer["removed"]["session_events"] == 3
        assert residue.columns_holding(db_dsn, "zzsession") == {}
        with pytest.raises(NotFound):
            await b.session_get(DESKTOP, NS, session_id=session["id"])


async def test_an_artifact_purged_in_one_namespace_keeps_the_bytes_the_other_references(
    db_dsn, db_conn, tmp_path
):
    content = b"shared bytes zzartifact " + uuid.uuid4().bytes
    sha = hashlib.sha256(content).hexdigest()
    async with open_backend(db_dsn, tmp_path) as b:
        for ns in (NS, OTHER):
            await b.artifact_put(DESKTOP, ns, name="f.bin", content=content,
                                 media_type="application/octet-stream")
        first = await purge(db_dsn, "artifact", sha, NS)
        assert first["blob_kept"] is True and first["namespaces"] == [NS]
        assert (await b.artifact_get(DESKTOP, OTHER, sha256=sha))["size"] == len(content)
        second = await purge(db_dsn, "artifact", sha)
        assert second["blob_kept"] is False and second["namespaces"] == [OTHER]
    assert residue.columns_holding(db_dsn, "zzartifact") == {}
    tombstones = db_conn.execute("SELECT namespace FROM purge_tombstones WHERE kind = 'artifact'"
                                 " ORDER BY id").fetchall()
    assert tombstones == [(NS,), (OTHER,)]


async def test_a_namespace_purge_leaves_nothing_of_it_and_everything_of_the_others(
    db_dsn, db_conn, tmp_path
):
    secrets = {NS: "zkq" + uuid.uuid4().hex[:16], OTHER: "zkq" + uuid.uuid4().hex[:16]}
    scoped = insert_token(db_dsn, "cursor", namespaces=[NS])
    async with open_backend(db_dsn, tmp_path) as b:
        for ns, word in secrets.items():
            m = await b.remember(DESKTOP, ns, content=f"note {word}", client_request_id="r")
            await b.remember(CURSOR, ns, content=f"note {word}")  # a corroboration
            await b.remember(DESKTOP, ns, content=f"then {word}", supersedes=[m["memory"]["id"]])
            await b.handoff_save(DESKTOP, ns, title="h", body=f"body {word}",
                                 client_request_id="h")
            s = (await b.session_create(DESKTOP, ns, title=f"s {word}"))["session"]
            await b.session_append(DESKTOP, ns, session_id=s["id"], type="step",
                                   payload={"x": word})
            await b.artifact_put(DESKTOP, ns, name="f.txt", content=f"file {word}".encode(),
                                 media_type="text/plain")
            await b.namespace_init(DESKTOP, ns, {"description": f"project {word}"})
            await lexicon.refresh(b, ns)
        db_conn.execute("ANALYZE")
        assert "pg_statistic" in residue.everywhere(db_dsn, secrets[NS])
        others_before = residue.columns_holding(db_dsn, secrets[OTHER])

        answer = ok_json(cli(db_dsn, "purge", "namespace", NS, "--reason", "project closed",
                             "--yes", "--json"))

        assert residue.everywhere(db_dsn, secrets[NS]) == {}
        assert residue.columns_holding(db_dsn, secrets[OTHER]) == others_before
        assert answer["active_tokens_naming_it"] == [_token_id(db_conn, scoped)]
        assert answer["removed"]["artifact_blobs"] == 1 and answer["not_reclaimed"] == []
        for _, table, column, _ in residue.columns(db_conn):
            if column == "namespace" and table != "purge_tombstones":
                assert db_conn.execute(f"SELECT count(*) FROM {table} WHERE namespace = %s",
                                       [NS]).fetchone() == (0,), table
        assert db_conn.execute("SELECT kind, target FROM purge_tombstones").fetchall() == [
            ("namespace", NS)]
        assert len((await b.list_memories(DESKTOP, OTHER))["memories"]) == 1


def _token_id(conn: psycopg.Connection, token: str) -> int:
    return conn.execute("SELECT id FROM api_tokens WHERE token_hash = %s",
                        [hashlib.sha256(token.encode()).digest()]).fetchone()[0]
