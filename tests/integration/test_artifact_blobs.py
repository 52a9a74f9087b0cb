"""The global blob tables are reachable only through a visible namespace reference."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

from tests.support.memories import CURSOR, open_backend


async def test_the_app_role_cannot_read_another_namespaces_blob_even_knowing_its_hash(
    db_dsn, tmp_path
):
    async with open_backend(db_dsn, tmp_path) as backend:
        put = await backend.artifact_put(CURSOR, "team-a", name="f", content=b"secret bytes",
                                         media_type="text/plain")
    sha = bytes.fromhex(put["artifact"]["sha256"])
    assert sha == hashlib.sha256(b"secret bytes").digest()
    with psycopg.connect(db_dsn, autocommit=False) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute("SELECT set_config('memhub.namespaces', 'team-b', true)")
        as_b = conn.execute("SELECT memhub_artifact_read(%s, 0, 100)", [sha]).fetchone()[0]
        conn.rollback()
        conn.execute("SET ROLE memhub_app")
        conn.execute("SELECT set_config('memhub.namespaces', 'team-a', true)")
        as_a = conn.execute("SELECT memhub_artifact_read(%s, 0, 100)", [sha]).fetchone()[0]
        conn.rollback()
    assert as_b is None
    assert bytes(as_a) == b"secret bytes"


@pytest.mark.parametrize("table", ["artifact_blobs", "artifact_chunks"])
def test_the_app_role_has_no_direct_access_to_the_blob_tables(db_dsn, table):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT count(*) FROM {table}")


def test_the_database_refuses_bytes_filed_under_a_hash_they_do_not_have(db_dsn):
    wrong = hashlib.sha256(b"what the caller claims").digest()
    with psycopg.connect(db_dsn, autocommit=False) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute("SELECT set_config('memhub.namespaces', 'team-a', true)")
        conn.execute("SELECT memhub_artifact_begin(%s, 5, 1048576)", [wrong])
        conn.execute("SELECT memhub_artifact_chunk_put(%s, 0, %s)", [wrong, b"other"])
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("SELECT memhub_artifact_finish(%s)", [wrong])
