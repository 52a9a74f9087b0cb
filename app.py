"""memhub's process: FastAPI serving `/mcp` (stateless Streamable HTTP), `/admin`, `/artifact`,
`/healthz` and `/metrics`.

`create_app(settings)` builds everything and connects to nothing. Its lifespan starts the
embedded PostgreSQL (when DATABASE_URL is unset), applies migrations, opens the pool, seeds the
surface tokens, starts the background services (embedding model and worker, expiry sweep,
word-statistics recount, garbage collection) and then the MCP app's own lifespan inside ours.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from .admin import mount as admin_mount
from .config import Settings, settings_problem
from .embedding import model_files
from .embedding.embedder import SHUTDOWN_LOAD_WAIT, Embedder
from .errors import MemhubError
from .gateway import artifact_route, github_webhook, metrics_route
from .gateway.access_log import AccessLog
from .gateway.body_limit import BodyLimit, mcp_body_limit, take_over_mcp_body_limit
from .gateway.fair_share import FairGate, FairShare
from .gateway.host_check import HostCheck
from .gateway.hosts import allowed_hosts
from .gateway.mcp_request import JsonRpcPrecheck, NormaliseMcpRequest
from .gateway.query_prefetch import QueryPrefetch
from .gateway.rate_limit import FailedLookupLimiter
from .gateway.token_gate import TokenGate, token_shape_check
from .gateway.token_limits import TokenLimits
from .github.client import GitHubClient
from .logs import configure_logging
from .metrics import Metrics
from .oauth import routes as oauth_routes
from .runtime import Runtime, run_until_shutdown
from .storage import expiry, retention
from .storage.postgres.backend import PostgresBackend
from .storage.postgres.database_url import DATABASE_URL_REMEDY, check_database_url, direct_dsn
from .storage.postgres.embedded import EmbeddedPostgres, keep_alive
from .storage.postgres.migrate import apply_migrations
from .storage.postgres.retrieval import lexicon
from .storage.postgres.retrieval.embedding_queue import EmbeddingWorker
from .storage.postgres.scope import bind_caller
from .storage.principal import Principal
from .tools.server import build_mcp

logger = logging.getLogger("memhub")


def version() -> str:
    try:
        return metadata.version("memhub")
    except metadata.PackageNotFoundError:
        return "0.0.0+local"


def announce_tokens(created: dict[str, str], admin_url: str) -> None:
    """Print newly generated surface tokens once, on the operator console, framed so they stand
    out among the JSON log lines (never written to the log itself)."""
    if not created:
        return
    rule = "memhub: " + "=" * 72 + "\n"
    lines = [rule, "memhub: NEW CLIENT TOKENS, shown only this once: copy them now.\n"]
    lines += [f"memhub:   {surface:<12} {token}\n" for surface, token in created.items()]
    lines += [f"memhub: Rotate them or create more at {admin_url}\n", rule]
    sys.stderr.write("\n" + "".join(lines) + "\n")
    sys.stderr.flush()


def model_notice(settings: Settings) -> Callable[[dict[str, Any]], None]:
    """What the console is told about the embedding model: where it is being fetched to, that
    there is none (and the command that fixes it), that it did not load, and then that it is
    ready. Framed like the tokens, outside the JSON log (which has the same, in detail)."""
    told: list[str] = []

    def tell(status: dict[str, Any]) -> None:
        state = status["state"]
        if state == "fetching":
            lines = [f"fetching the embedding model {status['model']} (once) into "
                     f"{model_files.models_dir(settings)}; progress is in the log.",
                     "Search is keyword-only until it is ready."]
        elif state in ("absent", "unavailable"):
            what = "NO EMBEDDING MODEL" if state == "absent" else "THE MODEL DID NOT LOAD"
            why = status["reason"].replace("_", " ")
            if status.get("detail"):
                why += f": {status['detail'][:160]}"
            lines = [f"{what} ({why}): search is keyword-only.", f"Fix: {status['fix']}"]
            if state == "absent":
                lines += ["  PATH: a directory holding the ONNX export of all-MiniLM-L6-v2; "
                          "a running memhub picks it up within seconds.",
                          "  Or start memhub where huggingface.co (or an HF_ENDPOINT mirror) "
                          "is reachable, MEMHUB_EMBED_OFFLINE unset: it fetches the model."]
        elif state == "ready" and told:
            lines = ["embedding model ready: search by meaning is on."]
        else:
            return
        told.append(state)
        rule = "memhub: " + "=" * 72 + "\n"
        text = "".join(f"memhub: {line}\n" for line in lines)
        sys.stderr.write("\n" + rule + text + rule + "\n")
        sys.stderr.flush()

    return tell


def admin_url(settings: Settings) -> str:
    """Where the operator opens the dashboard: MEMHUB_PUBLIC_URL's, or the bind address's."""
    if settings.public_url:
        return settings.public_url.rstrip("/") + "/admin"
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}/admin"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    # One metrics registry per app: several apps in one process (tests) never collide.
    rt = Runtime(settings=settings, version=version(), metrics=Metrics(),
                 github_factory=lambda: GitHubClient(settings))
    mcp_app = build_mcp(rt).http_app(
        path="/mcp",
        stateless_http=True,
        json_response=True,
        host_origin_protection="auto",
        allowed_hosts=allowed_hosts(settings),
        allowed_origins=settings.allowed_origins,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            dsn = await _database(settings, stack)
            await asyncio.to_thread(apply_migrations, direct_dsn(settings) or dsn)
            # Made before the backend, which embeds queries with it; it loads in the background
            # (_start_embeddings): until then searches are lexical.
            # The server may fetch the model (unless MEMHUB_EMBED_OFFLINE) and watches for an
            # import; nothing else does.
            embedder = Embedder(settings, fetch=True, watch=True, announce=model_notice(settings))
            backend = PostgresBackend(settings, dsn, embedder=embedder)
            logger.info("database", extra={"pooler": "transaction" if backend.pooled else "none",
                                           "listen": backend.listen_dsn is not None})
            await backend.open()
            stack.push_async_callback(backend.close)
            stack.push_async_callback(rt.close_github)
            rt.backend = backend
            web = settings.mcp_auth_token.get_secret_value() if settings.mcp_auth_token else None
            created = await backend.seed_surface_tokens(web)
            # The operator already knows MCP_AUTH_TOKEN; only generated tokens are shown.
            announce_tokens({s: t for s, t in created.items() if not (s == "web" and web)},
                            admin_url(settings))
            await _start_embeddings(rt, backend, embedder, stack)
            run_until_shutdown(stack, expiry.sweep_forever(
                backend, settings.expiry_sweep_seconds, rt.metrics.job_recorder("expiry_sweep")),
                "memhub-expiry-sweep")
            run_until_shutdown(stack, lexicon.refresh_forever(
                backend, settings.lexicon_refresh_seconds,
                rt.metrics.job_recorder("lexicon_refresh")), "memhub-lexicon-refresh")
            run_until_shutdown(stack, retention.collect_forever(
                backend, retention.RetentionPolicy.from_settings(settings),
                settings.gc_interval_seconds, rt.metrics.job_recorder("gc")), "memhub-gc")
            # Started before the MCP app and so stopped after it: its last flush writes the
            # rows of the last calls.
            run_until_shutdown(stack, rt.activity.write_forever(backend), "memhub-activity")
            await stack.enter_async_context(mcp_app.lifespan(app))
            take_over_mcp_body_limit(mcp_app)
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
        return JSONResponse({"status": "ok", "db": "ok", **_model_health(rt)})

    admin = admin_mount.install(app, rt)
    oauth = oauth_routes.install(app, rt, admin.operator)  # before the MCP app's catch-all mount
    artifact_route.install(app, rt)
    metrics_route.install(app, rt)
    github_webhook.install(app, rt)
    app.mount("/", mcp_app)
    # Middleware added last runs first: AccessLog sees every request, the gate (then the
    # token's limits) runs before the body limit (an unauthenticated oversized request is a
    # 401, not a 413), and the JSON-RPC pre-check and the query prefetch read only an
    # authenticated request within the limit.
    if settings.query_prefetch:
        app.add_middleware(QueryPrefetch, embedder=lambda: rt.embedder)
    if settings.max_active_calls:
        # Outside the prefetch: a call waiting for its turn has not started its query's
        # embedding either.
        app.add_middleware(FairGate, share=FairShare(settings.max_active_calls))
    app.add_middleware(JsonRpcPrecheck)
    app.add_middleware(BodyLimit, max_bytes=mcp_body_limit(settings.artifact_max_bytes))
    # Just inside the gate: a token over its limits is refused before its body is read.
    app.add_middleware(TokenLimits, admission=rt.admission, settings=settings,
                       on_refused=rt.metrics.limit_refused)
    web_token = settings.mcp_auth_token.get_secret_value() if settings.mcp_auth_token else None
    app.add_middleware(TokenGate, authenticate=_authenticator(rt), prefixes=("/mcp", "/artifact"),
                       plausible=token_shape_check(web_token),
                       limiter=FailedLookupLimiter(settings.auth_failure_limit,
                                                   settings.auth_failure_window_seconds),
                       on_refused=rt.metrics.auth_refused,
                       resource_metadata=("/mcp", oauth.resource_metadata) if oauth else None)
    app.add_middleware(NormaliseMcpRequest)
    # Every route but /healthz and /metrics refuses a Host this server does not answer to (DNS
    # rebinding), before a token is looked at or a dashboard page is built from that Host.
    app.add_middleware(HostCheck, allowed=allowed_hosts(settings))
    app.add_middleware(AccessLog, observe=rt.metrics.observe_http)
    return app


def _model_health(rt: Runtime) -> dict[str, Any]:
    """What /healthz says of the model, to anyone: its state and, without one, the reason in
    fixed words and the fix (never the detail, which names paths and addresses). Still a 200:
    the service answers, by keyword."""
    embedder = rt.embedder
    if embedder is None:
        return {}
    status = embedder.status()
    out = {"model": status["state"]}
    if "fix" in status:
        out.update(model_reason=status["reason"], model_fix=status["fix"])
    return out


def _authenticator(rt: Runtime):
    async def authenticate(token: str) -> Principal | None:
        principal = await rt.storage().authenticate(token)
        # Awaited in the gate's own task, so the binding reaches everything this request runs:
        # row-level security then follows the token's scope (storage/postgres/scope.py).
        bind_caller(principal)
        return principal

    return authenticate


async def _database(settings: Settings, stack: AsyncExitStack) -> str:
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    embedded = EmbeddedPostgres(settings.data_dir)
    dsn = await asyncio.to_thread(embedded.start)
    stack.callback(embedded.stop)
    # Registered after stop(), so the watchdog ends first (LIFO) and never revives a cluster
    # being stopped.
    run_until_shutdown(stack, keep_alive(embedded), "memhub-embedded-watchdog")
    return dsn


async def _start_embeddings(rt: Runtime, backend: PostgresBackend, embedder: Embedder,
                            stack: AsyncExitStack) -> None:
    """Load the model in the background (searches degrade to lexical until it is ready) and
    run the worker that drains the embedding queue."""
    settings = rt.settings
    embedder.start()
    # Shutting down ends a fetch or a watch at once and waits (bounded) for a load still in
    # progress: a process that exits while onnxruntime builds a session in the loader thread
    # aborts (std::terminate, exit 134) instead of exiting cleanly. Registered first, so it
    # runs after the worker has stopped.
    stack.push_async_callback(asyncio.to_thread, embedder.stop, SHUTDOWN_LOAD_WAIT)
    rt.embedder = embedder
    if not settings.embed_worker:
        return
    worker = EmbeddingWorker(backend, embedder, batch=settings.embed_batch_size,
                             max_attempts=settings.embed_max_attempts,
                             max_lag=settings.embed_max_lag_seconds,
                             nice=settings.embed_nice,
                             record_run=rt.metrics.job_recorder("embedding_worker"))
    embedder.worker = worker
    rt.embedding_worker = worker
    await worker.start()
    stack.push_async_callback(worker.stop)


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's handling of X-Forwarded-For / X-Forwarded-Proto: believed only from the
    proxies named in MEMHUB_TRUSTED_PROXIES. uvicorn's own default believes any local process
    (127.0.0.1), which could then claim a new address for every /admin password guess."""
    if not settings.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": list(settings.trusted_proxies)}


def main() -> None:
    import uvicorn

    try:
        settings = Settings()
    except ValidationError as exc:
        sys.stderr.write(f"memhub: invalid settings:\n{settings_problem(exc)}\n")
        sys.exit(2)
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
        **proxy_options(settings),
    )


if __name__ == "__main__":
    main()
