"""A memory's derived_from in an export: an import checks every entry as memory_remember does
(it names a record of the target namespace, the file's own included), entries naming a record
of the file follow a renamed namespace, and an export leaves out what a purge removed."""

from __future__ import annotations

import json

import psycopg
import pytest

from memhub.errors import NotFound
from memhub.storage.admin import Actor
from memhub.storage.postgres.operator.purge import PostgresPurge
from memhub.storage.purge import check_target
from tests.support.memories import open_backend
from tests.support.transfer import (
    CURSOR,
    NS,
    export_to,
    fresh_database,
    import_from,
    populate,
    rewrite,
    snapshot,
)


@pytest.fixture
async def exported(db_dsn, tmp_path):
    ids = await populate(db_dsn, tmp_path / "src")
    path = tmp_path / "acme.jsonl"
    await export_to(db_dsn, path)
    return db_dsn, ids, path


@pytest.fixture
def other_db(admin_dsn, template_db):
    with fresh_database(admin_dsn, template_db) as dsn:
        yield dsn


def naming(memory_id: str, *sources: dict):
    """A change for `rewrite`: the memory `memory_id` derived from `sources` too."""
    def change(record):
        if record["record"] == "memory" and record["id"] == memory_id:
            return {**record, "derived_from": [*record["derived_from"], *sources]}
        return record
    return change


def derived_from(dsn: str, namespace: str, content: str) -> list[dict]:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        return conn.execute("SELECT derived_from FROM memories WHERE namespace = %s"
                            " AND content = %s", [namespace, content]).fetchone()[0]


async def test_a_memory_derived_from_another_namespaces_memory_is_refused_and_nothing_is_written(
        exported, other_db, tmp_path):
    """The attack: a file claims a memory of the file came from another tenant's memory in the
    target database; memory_remember would answer NOT_FOUND, and so does the import."""
    _, ids, path = exported
    async with open_backend(other_db, tmp_path / "rival") as b:
        rival = (await b.remember(CURSOR, "rival", content="The rival's roadmap."))["memory"]
    forged = tmp_path / "forged.jsonl"
    stolen = {"type": "memory", "id": rival["id"]}
    rewrite(path, forged, naming(ids["fact"], stolen))
    before = snapshot(other_db)
    with pytest.raises(NotFound) as caught:
        await import_from(other_db, tmp_path, forged)
    assert caught.value.code == "NOT_FOUND"
    assert caught.value.details["missing"] == [stolen]
    assert caught.value.details["field"] == "derived_from"
    assert snapshot(other_db) == before


async def test_a_derived_from_entry_naming_a_record_of_the_file_follows_a_renamed_namespace(
        exported, tmp_path):
    source, ids, path = exported
    curated = tmp_path / "curated.jsonl"
    rewrite(path, curated, naming(ids["fact"], {"type": "session", "id": ids["session"]}))
    await import_from(source, tmp_path, curated, namespace="copy")
    with psycopg.connect(source) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        session = conn.execute("SELECT id::text FROM sessions WHERE namespace = 'copy'"
                               ).fetchone()[0]
    sources = derived_from(source, "copy", "Payouts run daily at 07:00 UTC.")
    assert {"type": "session", "id": session} in sources
    assert session != ids["session"]


async def test_an_export_leaves_out_a_source_a_purge_removed_so_the_file_imports(
        db_dsn, other_db, tmp_path):
    ids = await populate(db_dsn, tmp_path / "src")
    async with open_backend(db_dsn, tmp_path) as b:
        await b.remember(CURSOR, NS, content="Migrations run in a maintenance window.",
                         derived_from=[{"type": "session", "id": ids["session"]},
                                       {"type": "memory", "id": ids["fact"]}])
    await PostgresPurge(db_dsn).purge(check_target("session", ids["session"]),
                                      reason="a pasted secret", actor=Actor("cli:test", "local"))
    path = tmp_path / "acme.jsonl"
    records = [json.loads(line) for line in (await export_to(db_dsn, path)).splitlines()]
    written = next(r for r in records if r["record"] == "memory"
                   and r["revisions"][-1]["content"].startswith("Migrations"))
    assert written["derived_from"] == [{"type": "memory", "id": ids["fact"]}]
    report = await import_from(other_db, tmp_path, path)
    assert report["created"]["memory"] == 6
    again = await import_from(db_dsn, tmp_path, path)  # the source database: all identical
    assert sum(again["created"].values()) == 0 and again["unchanged"]["memory"] == 6
