"""Is DATABASE_URL usable? Asked by the entry points (`memhub`, `memhub-admin`) before they do
anything, because a start-up that fails on it otherwise ends in a driver traceback that buries
the reason."""

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


def check_database_url(settings: Settings) -> str | None:
    """Why DATABASE_URL cannot be used, or None when a connection opens (None too without
    one: the embedded cluster is memhub's own). The password is never part of the answer."""
    if settings.database_url is None:
        return None
    url = settings.database_url.get_secret_value()
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        return f"DATABASE_URL is not a PostgreSQL connection string ({str(exc).splitlines()[0]})"
    where = " ".join(f"{k}={parts[k]}" for k in ("host", "port", "dbname", "user") if parts.get(k))
    try:
        with psycopg.connect(url, connect_timeout=DB_CONNECT_TIMEOUT):
            return None
    except psycopg.Error as exc:
        reason = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        secret = parts.get("password")
        if secret:
            reason = reason.replace(str(secret), "***")
        return f"cannot connect to the database in DATABASE_URL ({where or 'defaults'}): {reason}"
