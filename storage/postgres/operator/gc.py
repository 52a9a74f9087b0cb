"""`GcStore`: garbage collection through `memhub_gc` (migration 0024), a PostgresBackend mixin
over `PgCore`. The function holds the single-runner lock, applies the ages and the batch, and
records the run; this side only passes the policy and reads the record."""

from __future__ import annotations

from typing import Any

from ...memory_dicts import iso
from ...principal import Principal
from ...retention import RetentionPolicy
from ..core import ALL_NAMESPACES, PgCore
from ..rows import Conn, one, one_row
from .admin_sessions import LOGIN_FORGIVE_SECONDS

DAY = 86400
# Kept past their use (migration 0034). GitHub redelivers only deliveries of the past few
# days, so a delivery id kept this long still recognises every redelivery.
GITHUB_DELIVERY_KEEP_SECONDS = 30 * DAY
# Longer than any intent-gate confirmation lives (MEMHUB_GATE_CONFIRM_TTL_SECONDS: at most a
# day), so a nonce goes only once its confirmation would be refused as expired anyway.
GATE_NONCE_KEEP_SECONDS = 2 * DAY


def run_summary(row: dict[str, Any] | None, principal: Principal) -> dict[str, Any]:
    """The `stats` tool's view of the last run. What a run removed counts every tenant's
    rows, so a token scoped to some namespaces sees only when it happened."""
    if row is None:
        return {"last_run_at": None}
    summary: dict[str, Any] = {"last_run_at": iso(row["finished_at"])}
    if principal.namespaces is None:
        summary.update(trigger=row["trigger"], removed=row["removed"], more=row["more"])
    return summary


async def last_run_in(conn: Conn) -> dict[str, Any] | None:
    return await one(conn, "gc.last_run", {})


class GcStore(PgCore):
    """Implements `GcBackend`."""

    async def collect_garbage(self, policy: RetentionPolicy, *, dry_run: bool = False,
                              trigger: str = "scheduled",
                              min_gap_seconds: float | None = None) -> dict[str, Any]:
        params = {
            "dry_run": dry_run,
            "idempotency_ttl": policy.idempotency_ttl_seconds,
            "dead_job_ttl": policy.dead_job_ttl_seconds,
            "grace": policy.artifact_grace_seconds,
            "login_forgive": LOGIN_FORGIVE_SECONDS,
            "batch": policy.batch,
            "trigger": trigger[:200],
            "min_gap": min_gap_seconds,
            "change_feed_retention_days": policy.change_feed_retention_days,
        }

        async def work(conn: Conn) -> dict[str, Any]:
            report = (await one_row(conn, "gc.run", params))["report"]
            if report.get("ran"):
                spent = (await one_row(conn, "gc.spent", {
                    "dry_run": dry_run, "batch": policy.batch,
                    "delivery_keep": GITHUB_DELIVERY_KEEP_SECONDS,
                    "nonce_keep": GATE_NONCE_KEEP_SECONDS}))["report"]
                activity = (await one_row(conn, "gc.activity", {
                    "dry_run": dry_run, "batch": policy.batch,
                    "retention_days": policy.activity_retention_days}))["report"]
                for part in (spent, activity):
                    report["removed"].update(part["removed"])
                    report["more"] = report["more"] or part["more"]
            return report

        # A replay after a lost connection removes what is still there: the same end state.
        return await self._run(ALL_NAMESPACES, work, retry_safe=True)

    async def last_gc_run(self) -> dict[str, Any] | None:
        async def read(conn: Conn) -> dict[str, Any] | None:
            row = await last_run_in(conn)
            if row is None:
                return None
            return {"at": iso(row["finished_at"]), "trigger": row["trigger"],
                    "removed": row["removed"], "more": row["more"]}

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)
