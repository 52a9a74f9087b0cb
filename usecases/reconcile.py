"""`coord_reconcile`'s use case: memories' claims checked against GitHub, verdicts recorded
(docs/claims.md).

Checking is here, not in storage: storage says what is due (one read transaction), the checks
run with no transaction open (GitHub may take seconds), and the verdicts are written in one
more. A check that cannot decide is `unverifiable`, never a wrong `current` (storage/claims.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

from ..github.client import Answer, GitHubClient
from ..runtime import Runtime
from ..storage.claims import branch_verdict, pr_verdict
from ..storage.principal import Principal

Decide = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]


async def check(client: GitHubClient, claim: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The verdict on one claim and its evidence (what GitHub said, or why it said nothing)."""
    decide: Decide
    if "pr" in claim:
        answer: Answer = await client.pull_request(claim["repo"], claim["pr"])
        decide = pr_verdict
    else:
        answer = await client.branch(claim["repo"], claim["branch"])
        decide = partial(branch_verdict, claim["sha"])
    if answer.body is None:
        return "unverifiable", {"reason": answer.reason, "http_status": answer.status}
    verdict, evidence = decide(answer.body)
    return verdict, {**evidence, "http_status": answer.status, "not_modified": answer.cached}


async def reconcile(rt: Runtime, principal: Principal, namespace: str,
                    ids: list[str] | None) -> dict[str, Any]:
    """Check the due claims (or those of `ids`) and record a verdict each: {"github":
    {"configured", "rate_limited_for_seconds"}, "checked": [{"memory_id", "claim", "verdict",
    "evidence", "checked_at"}]}. Raises what due_claims and record_verdicts raise (NOT_FOUND,
    INVALID_INPUT, TOO_LARGE, FORBIDDEN); GitHub's failures are verdicts, never errors."""
    backend = rt.storage()
    due = await backend.due_claims(principal, namespace, ids, rt.settings.claim_recheck_seconds)
    client = rt.github()
    results = await asyncio.gather(*(check(client, d["claim"]) for d in due))
    recorded = await backend.record_verdicts(principal, namespace, [
        {"memory_id": d["memory_id"], "verdict": v, "evidence": e}
        for d, (v, e) in zip(due, results, strict=True)])
    return {
        "github": {"configured": client.configured,
                   "rate_limited_for_seconds": round(client.blocked_for())},
        "checked": [{**r, "claim": d["claim"]} for d, r in zip(due, recorded, strict=True)],
    }
