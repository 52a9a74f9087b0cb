"""Is DATABASE_URL usable, and what stands between it and PostgreSQL? Asked by the entry points
(`memhub`, `memhub-admin`) before they do anything, because a start-up that fails on it otherwise
ends in a driver traceback that buries the reason; and by the pool, which behaves differently
behind a transaction pooler."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ...config import Settings

# Seconds to wait for DATABASE_URL's server (a serverless database may be waking up).
DB_CONNECT_TIMEOUT = 15

DATABASE_URL_REMEDY = (
    "check DATABASE_URL's host, port, user, password and database name and that the server "
    "accepts connections from here; or unset DATABASE_URL to use the embedded PostgreSQL."
)

# Where MEMHUB_DB_POOLER=auto assumes a transaction pooler: PgBouncer's default port, the
# transaction-mode port of Supabase's pooler (its port 5432 is session mode, which needs
# nothing), and Neon's pooled host names (`ep-...-pooler.<region>...`). Any other pooler
# is named with MEMHUB_DB_POOLER=transaction. Guessing wrong the other way round costs only
# speed: pooled mode is correct on a direct server too.
POOLER_PORTS = frozenset({"6432", "6543"})
POOLER_HOST_MARK = "-pooler."


def transaction_pooled(setting: str, dsn: str) -> bool:
    """Whether `dsn` leads to a transaction pooler, by MEMHUB_DB_POOLER (`setting`).

    Behind one, consecutive transactions of one client connection may run on different server
    sessions, and a server session serves other clients in between: nothing may be left on a
    session (SET, SET ROLE, LISTEN, session advisory locks, prepared statements)."""
    if setting != "auto":
        return setting == "transaction"
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return False
    hosts = str(parts.get("host") or "").split(",")
    ports = str(parts.get("port") or "").split(",")
    return (any(port.strip() in POOLER_PORTS for port in ports)
            or any(POOLER_HOST_MARK in host for host in hosts))


def direct_dsn(settings: Settings) -> str | None:
    """MEMHUB_DIRECT_DATABASE_URL: the database without a pooler, when one is configured."""
    url = settings.direct_database_url
    return url.get_secret_value() if url is not None else None


def check_database_url(settings: Settings) -> str | None:
    """Why DATABASE_URL (or MEMHUB_DIRECT_DATABASE_URL) cannot be used, or None when a
    connection opens (None too without one: the embedded cluster is memhub's own). The password
    is never part of the answer."""
    if settings.database_url is None:
        return None
    problem = _check("DATABASE_URL", settings.database_url.get_secret_value())
    direct = direct_dsn(settings)
    if problem is None and direct is not None:
        problem = _check("MEMHUB_DIRECT_DATABASE_URL", direct)
    return problem


def _check(name: str, url: str) -> str | None:
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        return f"{name} is not a PostgreSQL connection string ({str(exc).splitlines()[0]})"
    where = " ".join(f"{k}={parts[k]}" for k in ("host", "port", "dbname", "user") if parts.get(k))
    try:
        with psycopg.connect(url, connect_timeout=DB_CONNECT_TIMEOUT):
            return None
    except psycopg.Error as exc:
        reason = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        secret = parts.get("password")
        if secret:
            reason = reason.replace(str(secret), "***")
        return f"cannot connect to the database in {name} ({where or 'defaults'}): {reason}"
