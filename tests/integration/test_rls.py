"""Row-level security, the second wall behind the tools' namespace check.

Every table with a `namespace` column is found from the catalog, so a table added later is
covered without touching this file. Rows are synthesised generically (one per namespace) by the
owner with triggers and foreign-key checks off (`session_replication_role = replica`, which
leaves RLS in force), then every statement runs under role memhub_app with NO namespace filter:
the policies alone must confine it.
"""

from __future__ import annotations

import re
import uuid
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

MINE, OTHER = "alpha-proj", "beta-proj"


def tenant_tables(conn) -> list[str]:
    rows = conn.execute(
        "SELECT c.table_name FROM information_schema.columns c"
        "  JOIN information_schema.tables t USING (table_schema, table_name)"
        " WHERE c.table_schema = 'public' AND c.column_name = 'namespace'"
        "   AND t.table_type = 'BASE TABLE' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def tenant_views(conn) -> list[str]:
    rows = conn.execute(
        "SELECT c.table_name FROM information_schema.columns c"
        "  JOIN information_schema.tables t USING (table_schema, table_name)"
        " WHERE c.table_schema = 'public' AND c.column_name = 'namespace'"
        "   AND t.table_type = 'VIEW' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


# --- generic row synthesis -------------------------------------------------------------------
def _literal_candidates(conn, table: str, column: str, type_name: str) -> list[str | None]:
    """String literals (cast to the column type) worth trying, most generic first."""
    if type_name.startswith("vector"):
        dim = int(re.search(r"\((\d+)\)", type_name).group(1))
        return ["[" + ",".join(["1"] + ["0"] * (dim - 1)) + "]"]
    if type_name.endswith("[]"):
        return ["{}", "{probe}"]
    base = {
        "uuid": [str(uuid.uuid4())],
        "integer": ["1", "0", "2"], "bigint": ["1", "0", "2"], "smallint": ["1", "0", "2"],
        "numeric": ["1"], "real": ["1"], "double precision": ["1"],
        "boolean": ["false", "true"],
        "timestamp with time zone": ["now"], "timestamp without time zone": ["now"],
        "date": ["today"], "interval": ["1 hour"],
        "jsonb": ["{}", "[]"], "json": ["{}"],
        "bytea": ["\\x" + "00" * 32, "\\x" + "00" * 64],
        "tsvector": [""], "inet": ["127.0.0.1"], "xid8": ["1"],
    }.get(type_name)
    if base is not None:
        return base
    # Text-like: values named in the column's CHECK constraints (IN lists) first.
    found: list[str | None] = []
    for (definition,) in conn.execute(
        "SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k"
        "  JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)"
        " WHERE k.conrelid = %s::regclass AND k.contype = 'c' AND a.attname = %s",
        [table, column],
    ):
        found += re.findall(r"'([^']*)'::text", definition)
    return ["probe-" + uuid.uuid4().hex[:6]] + [v for v in found if v] + ["x", "a" * 64]


def _columns(conn, table: str) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT attname AS name, format_type(atttypid, atttypmod) AS type,"
            "       attnotnull AS notnull, atthasdef AS hasdef,"
            "       attidentity <> '' AS identity, attgenerated <> '' AS generated"
            "  FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
            "   AND NOT attisdropped ORDER BY attnum",
            [table],
        ).fetchall()


def _check_columns(conn, constraint: str, table: str) -> set[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_constraint k"
        "  JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)"
        " WHERE k.conrelid = %s::regclass AND k.conname = %s",
        [table, constraint],
    ).fetchall()
    return {r[0] for r in rows}


# Values for columns no generic literal satisfies: a pattern CHECK (a repository name), or a
# CHECK that needs one of several nullable columns (a claim is a PR or a branch and commit).
KNOWN_VALUES = {"memory_claims": {"repo": "acme/api", "pr": "1"},
                "github_repo_grants": {"repo": "acme/api"},
                "namespace_quotas": {"max_memories": "10"}}


def synthesize_row(conn, table: str, namespace: str) -> None:
    """Insert one type- and CHECK-valid row of `table` in `namespace` (owner, replica mode)."""
    extra = KNOWN_VALUES.get(table, {})
    needed = [
        c for c in _columns(conn, table)
        if c["name"] == "namespace" or c["name"] in extra
        or (c["notnull"] and not c["hasdef"] and not c["identity"] and not c["generated"])
    ]
    candidates = {
        c["name"]: ([namespace] if c["name"] == "namespace"
                    else [extra[c["name"]]] if c["name"] in extra
                    else _literal_candidates(conn, table, c["name"], c["type"]))
        for c in needed
    }
    choice = {name: 0 for name in candidates}
    last: Exception | None = None
    for _ in range(60):
        statement = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(table),
            sql.SQL(", ").join(sql.Identifier(c["name"]) for c in needed),
            sql.SQL(", ").join(
                sql.SQL("CAST({} AS {})").format(sql.Placeholder(), sql.SQL(c["type"]))
                for c in needed
            ),
        )
        values = [candidates[c["name"]][choice[c["name"]]] for c in needed]
        try:
            with conn.transaction():
                conn.execute(statement, values)
            return
        except (psycopg.errors.CheckViolation, psycopg.errors.UniqueViolation,
                psycopg.errors.InvalidTextRepresentation, psycopg.errors.DataException) as exc:
            last = exc
            culprit = exc.diag.constraint_name
            cols = _check_columns(conn, culprit, table) if culprit else set()
            cols = cols or {exc.diag.column_name} if exc.diag.column_name else cols
            advanced = False
            for name in sorted(cols or candidates):
                if name in choice and choice[name] + 1 < len(candidates[name]):
                    choice[name] += 1
                    advanced = True
                    break
            if not advanced:
                break
    pytest.fail(
        f"could not synthesise a row for tenant table {table}: {last!r}. Extend "
        "_literal_candidates so the RLS tests cover it."
    )


@pytest.fixture
def seeded(db_dsn):
    """Every tenant table holds one row in MINE and one in OTHER."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        tables = tenant_tables(conn)
        for table in tables:
            synthesize_row(conn, table, MINE)
            synthesize_row(conn, table, OTHER)
    return tables


@contextmanager
def app_tx(db_dsn: str, scope: str | None):
    """A transaction as memhub_app, optionally scoped like PgCore._tx does."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        # Replica mode keeps triggers and FK checks from refusing the probes; RLS stays on.
        conn.execute("SET session_replication_role = replica")
        conn.execute("SET ROLE memhub_app")
        try:
            with conn.transaction(force_rollback=True):
                if scope is not None:
                    conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [scope])
                yield conn
        finally:
            conn.execute("RESET ROLE")


def app_can(conn, table: str, privilege: str) -> bool:
    return conn.execute(
        "SELECT has_table_privilege('memhub_app', %s, %s)", [table, privilege]
    ).fetchone()[0]


def namespaces_of(rows) -> list[str]:
    return sorted(r[0] for r in rows)


# --- the catalog: every tenant table is protected -------------------------------------------
def test_every_table_with_a_namespace_column_has_rls_enabled_and_forced(db_conn):
    tables = tenant_tables(db_conn)
    assert "memories" in tables
    rows = db_conn.execute(
        "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
        " WHERE relname = ANY(%s) AND relnamespace = 'public'::regnamespace",
        [tables],
    ).fetchall()
    unprotected = [name for name, enabled, forced in rows if not (enabled and forced)]
    assert len(rows) == len(tables)
    assert unprotected == [], f"without ENABLE + FORCE ROW LEVEL SECURITY: {unprotected}"


def test_every_tenant_table_has_a_policy_for_all_commands_on_memhub_ns_visible(db_conn):
    missing = []
    for table in tenant_tables(db_conn):
        policies = db_conn.execute(
            "SELECT cmd, qual, with_check FROM pg_policies"
            " WHERE schemaname = 'public' AND tablename = %s",
            [table],
        ).fetchall()
        if not any(
            cmd == "ALL" and "memhub_ns_visible(namespace)" in (qual or "")
            and "memhub_ns_visible(namespace)" in (check or "")
            for cmd, qual, check in policies
        ):
            missing.append(table)
    assert missing == [], f"tenant tables without the tenant_isolation policy: {missing}"


def test_the_app_role_cannot_bypass_rls_and_owns_no_tenant_table(db_conn):
    superuser, bypass = db_conn.execute(
        "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'memhub_app'"
    ).fetchone()
    assert (superuser, bypass) == (False, False)
    owned = db_conn.execute(
        "SELECT relname FROM pg_class WHERE relowner = 'memhub_app'::regrole"
    ).fetchall()
    assert owned == []


# --- behaviour under the app role, without any WHERE namespace = ... -------------------------
def test_select_without_a_namespace_filter_sees_only_the_scoped_namespace(db_dsn, seeded):
    leaks = {}
    with app_tx(db_dsn, MINE) as conn:
        for table in seeded + tenant_views(conn):
            seen = namespaces_of(
                conn.execute(sql.SQL("SELECT namespace FROM {}").format(sql.Identifier(table)))
            )
            if set(seen) - {MINE} or (table in seeded and seen != [MINE]):
                leaks[table] = seen
    assert leaks == {}


def test_with_the_scope_unset_nothing_is_visible(db_dsn, seeded):
    visible = {}
    with app_tx(db_dsn, None) as conn:
        for table in seeded + tenant_views(conn):
            n = conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()[0]
            if n:
                visible[table] = n
    assert visible == {}


def test_a_scope_of_several_namespaces_sees_exactly_those(db_dsn, seeded):
    with app_tx(db_dsn, f"{MINE},{OTHER}") as conn:
        for table in seeded:
            seen = namespaces_of(
                conn.execute(sql.SQL("SELECT namespace FROM {}").format(sql.Identifier(table)))
            )
            assert seen == sorted([MINE, OTHER]), table


def test_update_without_a_namespace_filter_touches_only_the_scoped_namespace(db_dsn, seeded):
    touched = {}
    with app_tx(db_dsn, MINE) as conn:
        for table in seeded:
            if not app_can(conn, table, "UPDATE"):
                continue
            rows = conn.execute(
                sql.SQL("UPDATE {} SET namespace = namespace RETURNING namespace").format(
                    sql.Identifier(table)
                )
            ).fetchall()
            if namespaces_of(rows) != [MINE]:
                touched[table] = namespaces_of(rows)
    assert touched == {}


def test_update_cannot_move_a_row_into_another_namespace(db_dsn, seeded):
    allowed = []
    for table in seeded:
        with app_tx(db_dsn, MINE) as conn:
            if not app_can(conn, table, "UPDATE"):
                continue
            try:
                conn.execute(
                    sql.SQL("UPDATE {} SET namespace = %s").format(sql.Identifier(table)), [OTHER]
                )
                allowed.append(table)
            except psycopg.errors.InsufficientPrivilege:
                pass
    assert allowed == []


def test_delete_without_a_namespace_filter_removes_only_the_scoped_namespace(db_dsn, seeded):
    deleted = {}
    with app_tx(db_dsn, MINE) as conn:
        for table in seeded:
            if not app_can(conn, table, "DELETE"):
                continue
            rows = conn.execute(
                sql.SQL("DELETE FROM {} RETURNING namespace").format(sql.Identifier(table))
            ).fetchall()
            if namespaces_of(rows) != [MINE]:
                deleted[table] = namespaces_of(rows)
    assert deleted == {}


def _copy_statement(conn, table: str):
    cols = [c["name"] for c in _columns(conn, table) if not c["generated"]]
    return sql.SQL(
        "INSERT INTO {t} ({cols}) OVERRIDING SYSTEM VALUE"
        " SELECT {cols} FROM jsonb_populate_record(NULL::{t}, %s::jsonb)"
    ).format(t=sql.Identifier(table), cols=sql.SQL(", ").join(map(sql.Identifier, cols)))


def test_insert_into_another_namespace_is_refused_and_into_the_scoped_one_allowed(db_conn, db_dsn,
                                                                                 seeded):
    wrong = []
    for table in seeded:
        (row,) = db_conn.execute(
            sql.SQL("SELECT to_jsonb(t) FROM {} t WHERE namespace = %s").format(
                sql.Identifier(table)
            ),
            [MINE],
        ).fetchone()
        with app_tx(db_dsn, MINE) as conn:
            if not app_can(conn, table, "INSERT"):
                continue
            statement = _copy_statement(conn, table)
            try:
                with conn.transaction():
                    conn.execute(statement, [psycopg.types.json.Jsonb({**row, "namespace": OTHER})])
                wrong.append((table, "inserted into another namespace"))
            except psycopg.errors.InsufficientPrivilege:
                pass
            # Positive control: the same row in the scoped namespace goes in (after removing
            # the original, so no unique key refuses it instead).
            if app_can(conn, table, "DELETE"):
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE namespace = %s").format(sql.Identifier(table)),
                    [MINE],
                )
            try:
                with conn.transaction():
                    conn.execute(statement, [psycopg.types.json.Jsonb(row)])
            except psycopg.errors.UniqueViolation:
                pass  # no DELETE privilege to clear the original: the refusal above suffices
            except psycopg.errors.InsufficientPrivilege as exc:
                wrong.append((table, f"refused in its own namespace: {exc}"))
    assert wrong == []


def test_an_unscoped_insert_is_refused_everywhere(db_conn, db_dsn, seeded):
    accepted = []
    for table in seeded:
        (row,) = db_conn.execute(
            sql.SQL("SELECT to_jsonb(t) FROM {} t WHERE namespace = %s").format(
                sql.Identifier(table)
            ),
            [MINE],
        ).fetchone()
        with app_tx(db_dsn, None) as conn:
            if not app_can(conn, table, "INSERT"):
                continue
            try:
                conn.execute(_copy_statement(conn, table), [psycopg.types.json.Jsonb(row)])
                accepted.append(table)
            except psycopg.errors.InsufficientPrivilege:
                pass
    assert accepted == []


# --- read-only tokens: the database refuses their writes too (migration 0013) -----------------
def test_every_tenant_table_has_the_read_only_write_policies(db_conn):
    missing = []
    for table in tenant_tables(db_conn):
        policies = {
            (cmd, permissive): (qual or "", check or "")
            for cmd, permissive, qual, check in db_conn.execute(
                "SELECT cmd, permissive, qual, with_check FROM pg_policies"
                " WHERE schemaname = 'public' AND tablename = %s", [table]).fetchall()
        }
        insert = policies.get(("INSERT", "RESTRICTIVE"), ("", ""))
        update = policies.get(("UPDATE", "RESTRICTIVE"), ("", ""))
        delete = policies.get(("DELETE", "RESTRICTIVE"), ("", ""))
        if not ("memhub_writable()" in insert[1] and "memhub_writable()" in update[1]
                and "memhub_writable()" in delete[0]):
            missing.append(table)
    assert missing == [], f"tenant tables a read-only transaction could write: {missing}"


def test_a_read_only_transaction_reads_but_cannot_insert_update_or_delete(db_conn, db_dsn,
                                                                         seeded):
    """Under memhub.read_only = on every tenant table still reads its namespace's row, refuses
    INSERT and UPDATE with an error and deletes nothing; without the flag (positive control)
    the same UPDATE goes through."""
    wrote = []
    for table in seeded:
        (row,) = db_conn.execute(
            sql.SQL("SELECT to_jsonb(t) FROM {} t WHERE namespace = %s").format(
                sql.Identifier(table)), [MINE]).fetchone()
        with app_tx(db_dsn, MINE) as conn:
            conn.execute("SELECT set_config('memhub.read_only', 'on', true)")
            seen = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                sql.Identifier(table))).fetchone()[0]
            if seen != 1:
                wrote.append((table, f"read {seen} rows"))
            if app_can(conn, table, "UPDATE"):
                try:
                    with conn.transaction():
                        conn.execute(sql.SQL("UPDATE {} SET namespace = namespace").format(
                            sql.Identifier(table)))
                    wrote.append((table, "updated"))
                except psycopg.errors.InsufficientPrivilege:
                    pass
            if app_can(conn, table, "DELETE"):
                gone = conn.execute(sql.SQL("DELETE FROM {} RETURNING 1").format(
                    sql.Identifier(table))).fetchall()
                if gone:
                    wrote.append((table, "deleted"))
            if app_can(conn, table, "INSERT"):
                try:
                    with conn.transaction():
                        conn.execute(_copy_statement(conn, table),
                                     [psycopg.types.json.Jsonb({**row, "namespace": MINE})])
                    wrote.append((table, "inserted"))
                except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UniqueViolation):
                    pass
        with app_tx(db_dsn, MINE) as conn:
            if app_can(conn, table, "UPDATE"):
                updated = conn.execute(sql.SQL("UPDATE {} SET namespace = namespace RETURNING 1")
                                       .format(sql.Identifier(table))).fetchall()
                if len(updated) != 1:
                    wrote.append((table, "positive control: the writable UPDATE did not apply"))
    assert wrote == []


async def test_a_read_only_callers_transactions_carry_the_flag(db_dsn, seeded, tmp_path):
    """A storage call that forgot the application's write check still writes nothing for a
    read-only token: its transactions are opened with memhub.read_only = on."""
    from memhub.storage.postgres.scope import bind_caller
    from memhub.storage.principal import Principal
    from tests.support.memories import open_backend

    async def write(conn):
        await conn.execute("UPDATE lexicon_state SET docs = docs")  # no trigger: RLS alone

    reader = Principal(token_id=1, surface="cursor", namespaces=(MINE,), read_only=True)
    writer = Principal(token_id=2, surface="cursor", namespaces=(MINE,))
    async with open_backend(db_dsn, tmp_path) as backend:
        bind_caller(reader)
        try:
            with pytest.raises(Exception) as refused:
                await backend._run(MINE, write, retry_safe=False)
        finally:
            bind_caller(None)
        bind_caller(writer)
        try:
            await backend._run(MINE, write, retry_safe=False)  # a writer's goes through
        finally:
            bind_caller(None)
    assert "row-level security" in str(refused.value.__cause__ or refused.value)


# --- the scope follows the token, not only the requested namespace ----------------------------
async def test_a_scoped_callers_transaction_sees_nothing_of_a_namespace_it_asks_for_by_mistake(
    db_dsn, seeded, tmp_path
):
    """A storage call that forgot the app-layer check still leaks nothing: the transaction is
    confined to the intersection of the namespace asked for and the token's scope."""
    from memhub.storage.postgres.scope import bind_caller
    from memhub.storage.principal import Principal
    from tests.support.memories import open_backend

    async def count(conn):
        cur = await conn.execute("SELECT namespace, count(*) FROM memories GROUP BY 1")
        return {row["namespace"]: row["count"] for row in await cur.fetchall()}

    scoped = Principal(token_id=1, surface="cursor", namespaces=(MINE,))
    async with open_backend(db_dsn, tmp_path) as backend:
        bind_caller(scoped)
        try:
            asked_other = await backend._run(OTHER, count, retry_safe=True)
            asked_all = await backend._run("*", count, retry_safe=True)
            asked_mine = await backend._run(MINE, count, retry_safe=True)
        finally:
            bind_caller(None)
        unbound = await backend._run(OTHER, count, retry_safe=True)
    assert asked_other == {}
    assert asked_all == {MINE: 1}
    assert asked_mine == {MINE: 1}
    assert unbound == {OTHER: 1}
