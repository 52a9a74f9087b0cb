"""The dashboard's login and session state on PostgreSQL: login backoff per client address,
sessions ended by logout, and the one display of a token the dashboard just issued. Every
query runs in a transaction scoped '*' (the operator's own tables)."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from ...admin import LoginAttempt
from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..rows import Conn, row_of

# Login backoff: the first LOGIN_FREE_FAILURES failures cost nothing; each one after that
# locks the client out for twice as long as the previous, up to LOGIN_MAX_LOCK_SECONDS. An
# hour without a failure forgives the count.
LOGIN_FREE_FAILURES = 3
LOGIN_BASE_LOCK_SECONDS = 5
LOGIN_MAX_LOCK_SECONDS = 15 * 60
LOGIN_FORGIVE_SECONDS = 3600


def lock_seconds(failures: int) -> int:
    if failures < LOGIN_FREE_FAILURES:
        return 0
    exponent = min(failures - LOGIN_FREE_FAILURES, 20)
    return min(LOGIN_MAX_LOCK_SECONDS, LOGIN_BASE_LOCK_SECONDS * 2**exponent)


# The lock of the n-th failure at index n-1, for the SQL; it repeats the last entry (the cap,
# reached long before 32) for every failure beyond.
LOGIN_LOCKS = [lock_seconds(n) for n in range(1, 33)]


class AdminSessionStore(PgCore):
    """Implements the login and session part of `AdminBackend`."""

    # --- login backoff --------------------------------------------------------------------
    async def reserve_login_attempt(self, source: str) -> LoginAttempt:
        source = source[:200]

        async def write(conn: Conn) -> LoginAttempt:
            cur = await conn.execute(
                q("admin.reserve_login_attempt"),
                {"source": source, "locks": LOGIN_LOCKS,
                 "forgive_seconds": LOGIN_FORGIVE_SECONDS},
            )
            row = await cur.fetchone()
            if row is not None:
                return LoginAttempt(retry_after=0, lock_seconds=row["lock_seconds"])
            cur = await conn.execute(q("admin.login_retry_after"), {"source": source})
            locked = await cur.fetchone()
            # The lock can lapse between the two statements: still refused, for a second.
            return LoginAttempt(retry_after=max(1, locked["retry_after"]) if locked else 1,
                                lock_seconds=0)

        # Not retried: a replay after a lost COMMIT would count the attempt twice.
        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def clear_login_failures(self, source: str) -> None:
        async def write(conn: Conn) -> None:
            await conn.execute(q("admin.clear_login_failures"), {"source": source[:200]})

        await self._run(ALL_NAMESPACES, write, retry_safe=True)

    # --- /admin sessions ended by logout ----------------------------------------------------
    async def end_admin_session(self, sid_hash: bytes, ttl_seconds: int) -> None:
        async def write(conn: Conn) -> None:
            await conn.execute(q("admin.end_session"),
                               {"sid_hash": sid_hash, "ttl_seconds": ttl_seconds})

        await self._run(ALL_NAMESPACES, write, retry_safe=True)  # idempotent: DO NOTHING

    async def admin_session_ended(self, sid_hash: bytes) -> bool:
        async def read(conn: Conn) -> bool:
            cur = await conn.execute(q("admin.session_ended"), {"sid_hash": sid_hash})
            return bool((await row_of(cur))["ended"])

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

    # --- one display of a token the dashboard just issued -----------------------------------
    async def put_admin_flash(self, id_hash: bytes, sid_hash: bytes, pad: bytes,
                              detail: dict[str, Any], ttl_seconds: int) -> None:
        async def write(conn: Conn) -> None:
            await conn.execute(q("admin.put_flash"), {"id_hash": id_hash, "sid_hash": sid_hash,
                               "pad": pad, "detail": Jsonb(detail), "ttl_seconds": ttl_seconds})

        await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def take_admin_flash(self, id_hash: bytes,
                               sid_hash: bytes) -> tuple[bytes, dict[str, Any]] | None:
        async def write(conn: Conn) -> tuple[bytes, dict[str, Any]] | None:
            cur = await conn.execute(q("admin.take_flash"),
                                     {"id_hash": id_hash, "sid_hash": sid_hash})
            row = await cur.fetchone()
            return (bytes(row["pad"]), row["detail"]) if row else None

        # Not retried: a replay after a lost COMMIT finds the row gone; the token is then not
        # shown, never shown twice.
        return await self._run(ALL_NAMESPACES, write, retry_safe=False)
