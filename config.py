"""Settings: the only place memhub reads the environment or a secret.

Three names keep the seed's spelling (`DATABASE_URL`, `MCP_AUTH_TOKEN`, `ADMIN_PASSWORD`) so an
existing deployment's secrets keep working; everything else is `MEMHUB_*`. Every field here is
documented in README.md, and `tests/unit/test_settings_documented.py` fails when one is not.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SURFACES = ("web", "desktop-cli", "cursor")
# A key an operator types is hashed to 32 bytes (web/sessions.py); shorter than this it is
# guessable, and an empty one is sha256(""), which anyone can compute.
MIN_SESSION_SECRET_CHARS = 32
_SECRETS = ("database_url", "mcp_auth_token", "admin_password", "direct_database_url",
            "session_secret", "metrics_token", "github_token", "github_webhook_secret",
            "anthropic_api_key", "smoke_token")


def _default_data_dir() -> Path:
    # A per-user data dir that survives restarts (the embedded cluster lives under it).
    return Path(platformdirs.user_data_dir("memhub"))


def _default_model_cache_dir() -> Path:
    # Derived model files (the int8 copy) are a cache: shared by every data dir of the user.
    return Path(platformdirs.user_cache_dir("memhub")) / "models"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMHUB_", extra="ignore", populate_by_name=True)

    # --- seed-compatible names --------------------------------------------------------------
    database_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "database_url")
    )
    mcp_auth_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("MCP_AUTH_TOKEN", "mcp_auth_token")
    )
    admin_password: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ADMIN_PASSWORD", "admin_password")
    )

    # --- service ----------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: str = "INFO"
    data_dir: Path = Field(default_factory=_default_data_dir)
    public_url: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    # Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (IP addresses or
    # networks, "*" for any peer): only these may tell memhub the client's address (the
    # /admin login backoff and the audit) and scheme (the cookie's Secure flag). Empty: no
    # peer is believed, loopback included, since any local process can send the headers.
    trusted_proxies: list[str] = Field(default_factory=list)
    pool_min_size: int = Field(default=2, ge=1)
    pool_max_size: int = Field(default=20, ge=1)
    db_connect_timeout: float = Field(default=5.0, gt=0)
    statement_timeout_ms: int = Field(default=15000, ge=100)
    # A transaction pooler (PgBouncer pool_mode=transaction, Supabase's or Neon's pooled URL)
    # between memhub and PostgreSQL: every setting then lives inside the transaction and no
    # statement is prepared. `auto` assumes one at the pooler addresses listed in
    # storage/postgres/database_url.py.
    db_pooler: Literal["auto", "none", "transaction"] = "auto"
    # The same database without the pooler, for the session-level work (migrations, the
    # embedding worker's LISTEN); unset with a pooler: the worker polls instead.
    direct_database_url: SecretStr | None = None
    session_secret: SecretStr | None = None
    # Refused tokens per client address: this many in a burst, refilled evenly over the window;
    # past that the address is answered 429 RATE_LIMITED without a lookup, except for a token
    # that authenticated recently (gateway/rate_limit.py).
    auth_failure_limit: int = Field(default=30, ge=1)
    auth_failure_window_seconds: float = Field(default=60.0, gt=0)
    # Per token, in each process (gateway/token_limits.py): requests in flight at once (well
    # under the pool, so one token cannot hold every connection or core); one over it waits
    # up to the queue wait for a slot, then gets 429 RATE_LIMITED. An optional sustained rate
    # per minute with its burst (a token bucket); 0: no rate limit. A token's own values (the
    # dashboard, memhub-admin token limits) take precedence.
    token_max_in_flight: int = Field(default=4, ge=1, le=1000)
    token_queue_wait_seconds: float = Field(default=5.0, ge=0, le=60)
    token_rate_per_minute: int = Field(default=0, ge=0, le=1_000_000)
    token_rate_burst: int = Field(default=30, ge=1, le=100_000)
    # What a Prometheus scraper sends as `Authorization: Bearer <it>` to read GET /metrics
    # (gateway/metrics_route.py); no client token reads it. Unset: /metrics answers 404.
    metrics_token: SecretStr | None = None

    # --- memory and retrieval ---------------------------------------------------------------
    max_content_chars: int = Field(default=20000, ge=100)
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    # Unset: the copy `memhub-admin model import` put in data_dir/models, else the one fetched
    # there, else a fetch (embedding/model_files.py, embedding/fetch.py).
    embed_model_path: Path | None = None
    # Never fetch the model: a machine without internet, or one that must not reach out.
    embed_offline: bool = False
    # A fetch still running after this long is given up (the model is then absent).
    embed_fetch_timeout_seconds: float = Field(default=1200.0, gt=0, le=86400)
    embed_dim: int = Field(default=384, ge=8)
    # Queries (on every search's critical path) are embedded by an 8-bit copy of the model,
    # made once into model_cache_dir (embedding/quantized_model.py): int8-block ranks as the
    # shipped model does; int8-token is faster on CPUs without VNNI, nearly as close; int8 is
    # faster still at a small cost in ranking quality (docs/performance.md). Memories are always
    # embedded by the model as shipped.
    query_quantize: Literal["int8-block", "int8-token", "int8", "none"] = "int8-block"
    model_cache_dir: Path = Field(default_factory=_default_model_cache_dir)
    # Start embedding a search's query as soon as its authenticated request is read, while
    # the MCP layers parse it (gateway/query_prefetch.py; docs/performance.md).
    query_prefetch: bool = True
    # Jobs the embedding worker claims, embeds and commits together. A write in another
    # namespace waits behind at most the batch in progress and then its own (the claim takes
    # turns across namespaces): at ~22 ms a memory on one thread, 32 made that 1.5-3.5 s
    # behind a backlog, 8 a quarter of it; the model is called on 4 texts at a time either way,
    # so throughput is the same (docs/performance.md, "Fair to every tenant").
    embed_batch_size: int = Field(default=8, ge=1)
    # Tool calls in progress at once; more wait, let in by turns across namespaces
    # (gateway/fair_share.py). One per two cores: one call in progress already keeps two cores
    # busy (its query's model threads, then PostgreSQL); with twelve clients of one tenant
    # flooding, a quiet tenant's search p50 rose 2.7-3.2x at 1 on two cores, 3.6x at 2, 3.3-5.4x
    # at 4 and 9.0x with no bound, the flood's throughput 35, 47, 42-49 and 54 calls/s
    # (docs/performance.md, "Fair to every tenant"); 0: no bound.
    max_active_calls: int = Field(
        default_factory=lambda: max(1, (os.cpu_count() or 2) // 2), ge=0, le=1000)
    # How far the embedding queue may fall behind before write acknowledgements wait for it
    # (storage/postgres/retrieval/embedding_queue.py, Pacing); 0, the default: never. Off by
    # default: a bulk import or a flood from one client would make every other client's writes wait.
    embed_max_lag_seconds: float = Field(default=0.0, ge=0, le=60)
    # ONNX threads for the model; by default half the cores, so embedding never starves the
    # request path of CPU on a small machine.
    embed_threads: int = Field(default_factory=lambda: max(1, (os.cpu_count() or 2) // 2), ge=1)
    # ONNX threads for one query's embedding (the 8-bit copy; with MEMHUB_QUERY_QUANTIZE=none
    # queries share the shipped model and embed_threads). A query is on the search's critical
    # path and short, so it may use every core (up to 4); its threads sleep instead of spinning
    # between runs, leaving the cores to PostgreSQL and the event loop (embedding/embedder.py).
    query_threads: int = Field(default_factory=lambda: max(1, min(4, os.cpu_count() or 2)),
                               ge=1, le=64)
    embed_max_tokens: int = Field(default=256, ge=16, le=512)
    embed_worker: bool = True
    # How much lower than the requests' the embedding worker's model thread runs (a nice
    # value, Linux): a flood's embeddings take the CPU requests leave, not theirs
    # (storage/postgres/retrieval/embedding_queue.py; docs/performance.md, Fair to every tenant).
    embed_nice: int = Field(default=10, ge=0, le=19)
    embed_max_attempts: int = Field(default=5, ge=1)
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)
    rrf_k: int = Field(default=60, ge=1)
    query_cache_size: int = Field(default=1024, ge=0)
    expiry_sweep_seconds: float = Field(default=60.0, gt=0)
    lexicon_refresh_seconds: float = Field(default=2.0, gt=0)

    # --- artifacts --------------------------------------------------------------------------
    artifact_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)

    # --- garbage collection (storage/retention.py) ------------------------------------------
    # A client_request_id's stored answer is kept this long; a retry sent later is a new write.
    idempotency_ttl_seconds: int = Field(default=7 * 86400, ge=60)
    # Dead-lettered embedding jobs are kept this long (for `backfill --retry-dead`), then go.
    dead_job_ttl_seconds: int = Field(default=30 * 86400, ge=60)
    # Artifact bytes that no namespace references any more go once they are this old.
    artifact_grace_seconds: int = Field(default=86400, ge=0)
    # Change-feed entries (memory_changes) are kept this long; a cursor older than what is
    # kept answers CURSOR_EXPIRED.
    change_feed_retention_days: int = Field(default=30, ge=1)
    # Activity-log rows (one per tool call, no content: storage/activity.py) are kept this long.
    activity_retention_days: int = Field(default=14, ge=1)
    # How often each process tries a collection (one runs at a time across processes).
    gc_interval_seconds: float = Field(default=3600.0, gt=0)

    # --- admin ------------------------------------------------------------------------------
    admin_session_ttl_seconds: int = Field(default=8 * 3600, ge=60)

    # --- OAuth 2.1 for remote MCP clients (oauth/) -------------------------------------------
    # Served when ADMIN_PASSWORD is set (the operator approves each client on /admin) and the
    # issuer, MEMHUB_PUBLIC_URL or else the bind address, is https or loopback http.
    oauth_enabled: bool = True
    # Seconds an access token is good for; the client then refreshes it (a rotated refresh
    # token, good for oauth_refresh_token_ttl, or until the operator revokes the grant).
    oauth_access_token_ttl: int = Field(default=3600, ge=60, le=86400)
    oauth_refresh_token_ttl: int = Field(default=30 * 86400, ge=3600)
    # A spent refresh token presented again within this many seconds (a retry, or two refreshes
    # at once) gets the same new pair instead of revoking the grant; 0: every reuse revokes.
    oauth_refresh_grace_seconds: int = Field(default=30, ge=0, le=300)
    # Dynamic registration is open to anyone: per client address (an IPv6 /64), at most this
    # many registrations in any hour, and at most this many registered clients that no
    # operator has approved yet (they go after a day).
    oauth_registrations_per_hour: int = Field(default=10, ge=1, le=10_000)
    oauth_pending_clients_per_address: int = Field(default=100, ge=1, le=10_000)

    # --- claims checked against GitHub (github/, docs/claims.md) -----------------------------
    # A read-only token (contents and pull requests: read); without one every verdict is
    # unverifiable. The API's base URL: GitHub Enterprise is https://HOST/api/v3.
    github_token: SecretStr | None = None
    github_api_url: str = Field(default="https://api.github.com", min_length=1, max_length=500)
    # Enables POST /webhook/github: the secret set on the webhook; unset, the route answers 404.
    github_webhook_secret: SecretStr | None = None
    github_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    github_concurrency: int = Field(default=4, ge=1, le=32)
    # coord_reconcile without ids checks a claim again once its last verdict is this old.
    claim_recheck_seconds: int = Field(default=3600, ge=0)

    # --- the intent gate (docs/intent-gate.md) ---------------------------------------------
    # How long a preview's confirmation token stays valid.
    gate_confirm_ttl_seconds: int = Field(default=300, ge=1, le=86400)
    # How long a process trusts its cached gate profile and skills without a NOTIFY.
    gate_cache_ttl_seconds: float = Field(default=60.0, ge=0, le=86400)
    # The most a preview waits on tier 2's model (profile `tier2`); past it the preview is
    # answered without concerns, tier2 "unavailable".
    gate_tier2_timeout_seconds: float = Field(default=20.0, gt=0, le=120)

    # --- memhub-admin smoke (admin/smoke.py, docs/operations.md) ------------------------------
    # The token the smoke check uses when neither --token-file nor --token is given.
    smoke_token: SecretStr | None = None

    # --- the curator (coord_curate, curator/, docs/curator.md) -------------------------------
    # Without a key coord_curate answers {"curator_enabled": false} and sends nothing. The base
    # URL is the Messages API's host (tests point it at a loopback fake).
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str = Field(default="https://api.anthropic.com", min_length=1,
                                    max_length=500)
    curator_model: str = Field(default="claude-sonnet-4-5", min_length=1, max_length=100)
    curator_max_output_tokens: int = Field(default=4096, ge=256, le=32000)
    curator_timeout_seconds: float = Field(default=60.0, gt=0, le=600)

    @field_validator(*_SECRETS, mode="before")
    @classmethod
    def _blank_secret_is_unset(cls, value: object) -> object:
        # `VAR=` (a compose file's unset variable) must not become a key, a password or a
        # webhook secret that anyone can reproduce: blank is no setting, as everywhere else.
        if isinstance(value, str) and not value.strip():
            return None
        if isinstance(value, SecretStr) and not value.get_secret_value().strip():
            return None
        return value

    @field_validator("session_secret")
    @classmethod
    def _session_secret_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_SESSION_SECRET_CHARS:
            raise ValueError(
                f"must be at least {MIN_SESSION_SECRET_CHARS} characters (python -c 'import "
                "secrets; print(secrets.token_urlsafe(32))'), or unset to use a random key "
                "kept in the database")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, value: list[str]) -> list[str]:
        # uvicorn would take a mistyped entry for a Unix socket name and silently trust no one.
        out = [entry.strip() for entry in value]
        for entry in out:
            if entry != "*":
                ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return out

    def embedded(self) -> bool:
        """True when memhub must start its own PostgreSQL (no DATABASE_URL)."""
        return self.database_url is None


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]


def env_name(field: str) -> str:
    """The environment variable that sets `field` (a field name, or a seed-compatible alias
    such as ADMIN_PASSWORD, which pydantic reports as given)."""
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else []
        if field == name or field in choices:
            return str(choices[0]) if choices else f"MEMHUB_{name.upper()}"
    return field


def settings_problem(exc: ValidationError) -> str:
    """What is wrong with the environment, one variable per line, each named with pydantic's
    reason and never with its value (pydantic's own text quotes the value: a secret's would
    reach the terminal and the log)."""
    lines = []
    for error in exc.errors(include_input=False, include_url=False):
        field = str(error["loc"][0]) if error["loc"] else "?"
        lines.append(f"{env_name(field)}: {error['msg']}")
    return "\n".join(lines)
