"""memhub's process: FastAPI serving `/mcp` (stateless Streamable HTTP), `/admin` and `/healthz`.

`create_app(settings)` builds everything and connects to nothing; the lifespan starts the
embedded PostgreSQL (when DATABASE_URL is unset), applies migrations, opens the pool, seeds the
surface tokens, and starts the MCP app's own lifespan inside ours.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from auth import TokenGate
from config import Settings
from errors import MemhubError
from logs import configure_logging, redact
from storage.database_url import DATABASE_URL_REMEDY, check_database_url
from storage.migrate import apply_migrations
from storage.postgres import PostgresBackend
from tools import build_mcp
from tools.body_limit import BodyLimit, mcp_body_limit
from tools.context import Runtime
from tools.mcp_request import NormaliseMcpRequest
from tools.query_prefetch import QueryPrefetch

logger = logging.getLogger("memhub")

# Background services started in the lifespan, after the pool is open: dotted paths of
# `async def start(rt: Runtime, stack: AsyncExitStack) -> None` functions, which register
# their own shutdown on the stack.
STARTUP: list[str] = ["storage.expiry:start", "storage.embedding_worker:start",
                      "storage.lexicon:start"]


def _import_string(path: str):
    import importlib

    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def version() -> str:
    try:
        return metadata.version("memhub")
    except metadata.PackageNotFoundError:
        return "0.0.0+local"


class AccessLog:
    """Access log with the query string redacted (uvicorn's own would print `?token=`)."""

    def __init__(self, app) -> None:
        self.app = app
        self.log = logging.getLogger("memhub.access")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 0}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            query = scope.get("query_string", b"").decode("latin-1")
            path = scope.get("path", "") + (f"?{query}" if query else "")
            client = scope.get("client") or ("", 0)
            self.log.info(
                "request",
                extra={
                    "method": scope.get("method"),
                    "path": redact(path),
                    "status": status["code"],
                    "ms": round((time.perf_counter() - started) * 1000, 2),
                    "client": client[0],
                },
            )


def _allowed_hosts(settings: Settings) -> list[str]:
    hosts = ["localhost", "127.0.0.1", "[::1]", settings.host]
    if settings.public_url:
        hosts.append(urlsplit(settings.public_url).netloc)
    hosts.extend(settings.allowed_hosts)
    # Accept both bare and host:port spellings of every name.
    out: list[str] = []
    for host in hosts:
        out.append(host)
        if ":" not in host.strip("[]") or host.startswith("["):
            out.append(f"{host}:*")
    return sorted(set(out))


def announce_tokens(created: dict[str, str]) -> None:
    """Print newly generated surface tokens once, on the operator console (never to the log)."""
    for surface, token in created.items():
        sys.stderr.write(
            f"\nmemhub: created the '{surface}' token (shown once; rotate it in /admin):\n"
            f"    {token}\n"
        )
    if created:
        sys.stderr.flush()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    rt = Runtime(settings=settings, extras={"version": version()})
    mcp = build_mcp(rt)
    mcp_app = mcp.http_app(
        path="/mcp",
        stateless_http=True,
        json_response=True,
        host_origin_protection="auto",
        allowed_hosts=_allowed_hosts(settings),
        allowed_origins=settings.allowed_origins,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            dsn = await _database(settings, stack)
            await asyncio.to_thread(apply_migrations, dsn)
            backend = PostgresBackend(settings, dsn)
            await backend.open()
            stack.push_async_callback(backend.close)
            rt.backend = backend
            web = settings.mcp_auth_token.get_secret_value() if settings.mcp_auth_token else None
            created = await backend.seed_surface_tokens(web)
            # The operator already knows MCP_AUTH_TOKEN; only generated tokens are shown.
            announce_tokens({s: t for s, t in created.items() if not (s == "web" and web)})
            for path in STARTUP:
                await _import_string(path)(rt, stack)
            await stack.enter_async_context(mcp_app.lifespan(app))
            logger.info("memhub ready", extra={"host": settings.host, "port": settings.port})
            yield
            rt.backend = None

    app = FastAPI(
        title="memhub", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.runtime = rt

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        backend = rt.backend
        if backend is None:
            return JSONResponse(
                {"status": "error", "db": "error", "reason": "starting"}, status_code=503
            )
        try:
            await backend.ping()
        except MemhubError as err:
            return JSONResponse(
                {"status": "error", "db": "error", "reason": err.message}, status_code=503
            )
        return JSONResponse({"status": "ok", "db": "ok"})

    for extra in rt.extras.get("routers", []):
        app.include_router(extra)
    _mount_optional(app, rt)
    app.mount("/", mcp_app)
    if settings.query_prefetch:
        # Innermost, so only an authenticated request within the body limit is read
        # (tools/query_prefetch.py).
        app.add_middleware(QueryPrefetch, embedder=lambda: rt.extras.get("embedder"))
    # Inside the gate: an unauthenticated oversized request is a 401, not a 413.
    app.add_middleware(BodyLimit, max_bytes=mcp_body_limit(settings.artifact_max_bytes))
    app.add_middleware(TokenGate, authenticate=_authenticator(rt), prefixes=("/mcp", "/artifact"))
    app.add_middleware(NormaliseMcpRequest)
    app.add_middleware(AccessLog)
    return app


def _mount_optional(app: FastAPI, rt: Runtime) -> None:
    """Routers of other areas (admin dashboard, artifact streaming), when present."""
    import importlib

    for module_name in ("admin.routes", "tools.artifact_http"):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.install(app, rt)


def _authenticator(rt: Runtime):
    from storage.pg_scope import bind_caller

    async def authenticate(token: str):
        principal = await rt.storage().authenticate(token)
        # Awaited in the gate's own task, so the binding reaches everything this request runs:
        # row-level security then follows the token's scope (storage/pg_scope.py).
        bind_caller(principal)
        return principal

    return authenticate


async def _database(settings: Settings, stack: AsyncExitStack) -> str:
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    from storage.background import run_until_shutdown
    from storage.embedded import EmbeddedPostgres, keep_alive

    embedded = EmbeddedPostgres(settings.data_dir)
    dsn = await asyncio.to_thread(embedded.start)
    stack.callback(embedded.stop)
    # Registered after stop(), so the watchdog ends first (LIFO) and never revives a cluster
    # being stopped.
    run_until_shutdown(stack, keep_alive(embedded), "memhub-embedded-watchdog")
    return dsn


def main() -> None:
    import uvicorn

    settings = Settings()
    configure_logging(settings.log_level)
    problem = check_database_url(settings)
    if problem is not None:
        sys.stderr.write(f"memhub: {problem}\n  remedy: {DATABASE_URL_REMEDY}\n")
        sys.exit(2)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
