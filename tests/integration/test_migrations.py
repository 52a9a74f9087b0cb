import base64
import threading

import psycopg

from memhub.storage.postgres.migrate import apply_migrations, migration_files
from tests.support import db
from tests.support.retrieval import bulk_insert_memories


def _schema_fingerprint(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' ORDER BY 1, 2"
        ).fetchall() + conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()


def test_applying_migrations_twice_changes_nothing(admin_dsn):
    name = f"memhub_mig_{id(object())}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = db.with_db(admin_dsn, name)
    try:
        first = apply_migrations(dsn)
        assert first == [v for v, _, _ in migration_files()]
        before = _schema_fingerprint(dsn)
        assert apply_migrations(dsn) == []
        assert _schema_fingerprint(dsn) == before
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        assert [r[0] for r in rows] == first
    finally:
        db.drop(admin_dsn, name)


def test_two_processes_migrating_together_apply_each_file_once(admin_dsn):
    name = f"memhub_mig_race_{id(object())}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = db.with_db(admin_dsn, name)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run():
        try:
            results.append(apply_migrations(dsn))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors
        applied = sorted(v for r in results for v in r)
        assert applied == [v for v, _, _ in migration_files()]
    finally:
        db.drop(admin_dsn, name)


def test_first_migration_creates_vector_extension_and_token_table(db_conn):
    assert db_conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    assert db_conn.execute("SELECT to_regclass('api_tokens')").fetchone()[0] == "api_tokens"


def test_a_migration_that_rewrites_memories_leaves_them_vacuumed(admin_dsn, tmp_path):
    """0016 rewrites `memories` (a generated column added); the runner vacuums the table after
    it, so index-only scans (stats' counts) do not read the heap until autovacuum returns."""
    with db.migrated_before(admin_dsn, "0016", tmp_path) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            bulk_insert_memories(conn, "vacuumed", 2000)
        assert "0016" in apply_migrations(dsn)
        with psycopg.connect(dsn) as conn:
            visible, pages = conn.execute(
                "SELECT relallvisible, relpages FROM pg_class WHERE relname = 'memories'"
            ).fetchone()
        assert pages > 0 and visible == pages


def test_the_sealed_cursor_migration_drops_only_bootstrap_marks_holding_an_unsealed_cursor(
    admin_dsn, tmp_path
):
    """An unsealed (f1) cursor now answers CURSOR_EXPIRED, and a mark moves only after a read
    succeeds: a mark holding one would fail every bootstrap of its token, so 0036 drops it."""
    legacy = base64.urlsafe_b64encode(b"f1.0123abcd.1234.0").decode().rstrip("=")
    sealed = "Ag" + "A" * 64
    with db.migrated_before(admin_dsn, "0036", tmp_path) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            ids = [conn.execute(
                "INSERT INTO api_tokens (surface, kind, token_hash, prefix) VALUES ('web', "
                "'scoped', %s, 'mh_test') RETURNING id", [bytes([i]) * 32]).fetchone()[0]
                for i in (1, 2)]
            for token_id, cursor in zip(ids, (legacy, sealed), strict=True):
                conn.execute("INSERT INTO bootstrap_marks (token_id, namespace, cursor) "
                             "VALUES (%s, 'alpha', %s)", [token_id, cursor])
        assert "0036" in apply_migrations(dsn)
        with psycopg.connect(dsn) as conn:
            kept = conn.execute("SELECT cursor FROM bootstrap_marks").fetchall()
    assert kept == [(sealed,)]
