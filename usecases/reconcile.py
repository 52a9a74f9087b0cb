"""`coord_reconcile`'s use case: memories' claims checked against GitHub, verdicts recorded
(docs/claims.md).

Checking is here, not in storage: storage says what is due (one read transaction), the checks
run with no transaction open (GitHub may take seconds), and the verdicts are written in one
more. A check that cannot decide is `unverifiable`, never a wrong `current` (storage/claims.py).
GitHub is asked only about a repository the operator granted to the namespace: the server's
token may see repositories a tenant must not learn anything of (a private branch's head, a
pull request's state, whether the repository exists).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from ..github.client import GitHubClient
from ..runtime import Runtime
from ..storage.claims import NOT_GRANTED, branch_verdict, github_time, pr_verdict
from ..storage.principal import Principal

Checked = tuple[str, dict[str, Any], datetime | None]


async def check(client: GitHubClient, namespace: str, claim: dict[str, Any]) -> Checked:
    """The verdict on one claim of a granted repository, its evidence (what GitHub said, or why
    it said nothing) and the time on GitHub's clock of the state it reflects (a pull request's
    updated_at; for a branch, when GitHub answered), None when nothing decided."""
    if "pr" in claim:
        answer = await client.pull_request(namespace, claim["repo"], claim["pr"])
    else:
        answer = await client.branch(namespace, claim["repo"], claim["branch"])
    if answer.body is None:
        return "unverifiable", {"reason": answer.reason, "http_status": answer.status}, None
    if "pr" in claim:
        verdict, evidence = pr_verdict(answer.body)
        observed = github_time(answer.body.get("updated_at"))
    else:
        verdict, evidence = branch_verdict(claim["sha"], answer.body)
        observed = answer.date
    return (verdict, {**evidence, "http_status": answer.status, "not_modified": answer.cached},
            observed if verdict != "unverifiable" else None)


async def reconcile(rt: Runtime, principal: Principal, namespace: str,
                    ids: list[str] | None) -> dict[str, Any]:
    """Check the due claims (or those of `ids`) and record a verdict each: {"github":
    {"configured", "rate_limited_for_seconds"}, "checked": [{"memory_id", "claim", "verdict",
    "evidence", "checked_at"}], "skipped": [{"memory_id", "reason"}] (only when some were)}.
    A claim on a repository not granted to the namespace is `unverifiable` (reason
    repository_not_granted) without asking GitHub. Raises what due_claims and record_verdicts
    raise (NOT_FOUND, INVALID_INPUT, TOO_LARGE, FORBIDDEN); GitHub's failures are verdicts,
    never errors."""
    backend = rt.storage()
    found = await backend.due_claims(principal, namespace, ids,
                                     rt.settings.claim_recheck_seconds)
    due = found["due"]
    client = rt.github()

    async def one(d: dict[str, Any]) -> Checked:
        if not d["granted"]:
            return "unverifiable", {"reason": NOT_GRANTED}, None
        return await check(client, namespace, d["claim"])

    results = await asyncio.gather(*(one(d) for d in due))
    recorded = await backend.record_verdicts(principal, namespace, [
        {"memory_id": d["memory_id"], "verdict": v, "evidence": e, "observed_at": t}
        for d, (v, e, t) in zip(due, results, strict=True)])
    answer: dict[str, Any] = {
        "github": {"configured": client.configured,
                   "rate_limited_for_seconds": round(client.blocked_for())},
        "checked": [{**r, "claim": d["claim"]} for d, r in zip(due, recorded, strict=True)],
    }
    if found["skipped"]:
        answer["skipped"] = found["skipped"]
    return answer
