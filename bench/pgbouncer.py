"""A real PgBouncer (Debian's package, installed by `make test-deps`) in transaction pooling
mode, on a free loopback port in front of the tests' PostgreSQL.

Every database name is routed to the upstream server, so a test's own database (`db_dsn`) is
reachable through it. `pool_size` server connections per database and user: with 1, every
client transaction of a test runs, in turn, on ONE server session, so anything a client left on
that session is seen by the next one.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.common import free_port

PGBOUNCER = "/usr/sbin/pgbouncer"
START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0


class RunningPgBouncer:
    def __init__(self, upstream: dict, port: int, user: str, password: str,
                 log_path: Path) -> None:
        self.port = port
        self.user = user
        self.password = password
        self.log_path = log_path
        self._upstream = upstream

    def dsn(self, upstream_dsn: str) -> str:
        """`upstream_dsn`'s database, reached through this PgBouncer."""
        dbname = conninfo_to_dict(upstream_dsn).get("dbname") or "postgres"
        return make_conninfo("", host="127.0.0.1", port=str(self.port), dbname=dbname,
                             user=self.user, password=self.password, sslmode="disable",
                             connect_timeout="10")

    def server_pids(self, upstream_dsn: str) -> list[int]:
        """The PostgreSQL backends this PgBouncer holds for `upstream_dsn`'s database (read on
        its admin console)."""
        dbname = conninfo_to_dict(upstream_dsn).get("dbname") or "postgres"
        console = make_conninfo(self.dsn(upstream_dsn), dbname="pgbouncer")
        with psycopg.connect(console, autocommit=True) as conn:
            cur = conn.execute("SHOW SERVERS")
            cols = [c.name for c in cur.description]
            rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        return [r["remote_pid"] for r in rows if r["database"] == dbname]

    def session_state(self, upstream_dsn: str) -> dict:
        """What a pooled server session carries, read by a plain client of this PgBouncer (with
        pool_size=1: the session every other client's transactions ran on). Blocking: call it
        in a thread from async code, so the event loop can finish a transaction the code under
        test has begun while this client waits for the session."""
        with psycopg.connect(self.dsn(upstream_dsn), autocommit=True) as conn:
            return session_state(conn)

    def log(self) -> str:
        try:
            return self.log_path.read_text()[-4000:]
        except OSError:
            return ""


def session_state(conn: psycopg.Connection) -> dict:
    """The session-level state anything could leave behind: the role, memhub's settings (a
    custom setting once set transaction-locally reads '' afterwards, never set NULL: both
    are ''), the statement timeout, prepared statements, LISTENs, advisory locks."""
    row = conn.execute(
        "SELECT current_user, session_user,"
        " coalesce(current_setting('memhub.namespaces', true), ''),"
        " coalesce(current_setting('memhub.read_only', true), ''),"
        " current_setting('statement_timeout'),"
        " (SELECT count(*) FROM pg_prepared_statements),"
        " (SELECT count(*) FROM pg_listening_channels()),"
        " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        "   AND pid = pg_backend_pid())").fetchone()
    keys = ("current_user", "session_user", "namespaces", "read_only", "statement_timeout",
            "prepared", "listening", "advisory_locks")
    return dict(zip(keys, row, strict=True))


def fresh_session_state(upstream_dsn: str) -> dict:
    """session_state of a fresh login straight to the server: what a pooled session must still
    look like after anyone's transactions."""
    with psycopg.connect(upstream_dsn, autocommit=True) as conn:
        return session_state(conn)


def _run_as(upstream_host: str) -> str | None:
    """PgBouncer refuses to run as root: then it runs as the owner of the upstream's socket
    directory (the embedded cluster's system user), who can reach the socket, or as nobody
    for a TCP upstream."""
    if os.geteuid() != 0:
        return None
    if upstream_host.startswith("/"):
        return pwd.getpwuid(os.stat(upstream_host).st_uid).pw_name
    return "nobody"


def _wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pgbouncer exited with {proc.returncode}: "
                               f"{log.read_text()[-2000:] if log.exists() else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"pgbouncer did not listen on {port} within {START_TIMEOUT} s")


@contextmanager
def pgbouncer(upstream_dsn: str, *, pool_size: int = 1) -> Iterator[RunningPgBouncer]:
    """Start PgBouncer (pool_mode=transaction) in front of `upstream_dsn`'s server; always
    stopped on the way out."""
    if not os.access(PGBOUNCER, os.X_OK):
        raise RuntimeError(f"{PGBOUNCER} is missing: run `make test-deps` "
                           "(Debian's pgbouncer package)")
    upstream = conninfo_to_dict(upstream_dsn)
    host = upstream.get("host") or "localhost"
    user = upstream.get("user") or pwd.getpwuid(os.geteuid()).pw_name
    # Clients authenticate to PgBouncer with this (SCRAM); PgBouncer logs in upstream with it.
    password = upstream.get("password") or secrets.token_hex(12)
    port = free_port()
    run_as = _run_as(host)
    # Not under pytest's basetemp: its folders are private to this user, and PgBouncer may run
    # as another one.
    workdir = Path(tempfile.mkdtemp(prefix="memhub-pgbouncer-"))
    log_path = workdir / "pgbouncer.log"
    (workdir / "userlist.txt").write_text(f'"{user}" "{password}"\n')
    (workdir / "pgbouncer.ini").write_text("\n".join([
        "[databases]",
        f"* = host={host} port={upstream.get('port') or 5432}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = scram-sha-256",
        f"auth_file = {workdir / 'userlist.txt'}",
        f"admin_users = {user}",
        "pool_mode = transaction",
        f"default_pool_size = {pool_size}",
        "reserve_pool_size = 0",
        "max_client_conn = 1000",
        "query_wait_timeout = 30",  # a client never waits unbounded for a server
        f"logfile = {log_path}",
        f"pidfile = {workdir / 'pgbouncer.pid'}",
        *([f"user = {run_as}"] if run_as else []),
        "",
    ]))
    if run_as:
        entry = pwd.getpwnam(run_as)
        for path in (workdir, *workdir.iterdir()):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    proc = subprocess.Popen([PGBOUNCER, str(workdir / "pgbouncer.ini")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(proc, port, log_path)
        yield RunningPgBouncer(upstream, port, user, password, log_path)
    finally:
        if proc.poll() is None:
            proc.terminate()  # SIGTERM: immediate shutdown, clients cut
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
        shutil.rmtree(workdir, ignore_errors=True)
