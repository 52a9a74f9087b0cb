"""Claims about a repository carried by memories, and how a check becomes a verdict
(migration 0032; storage/postgres/memories/claims.py; docs/claims.md).

A claim is one of
- {"repo": "owner/name", "pr": 412}: pull request #412 of that repository is merged;
- {"repo": "owner/name", "branch": "release/2.3", "sha": "a1b2c3d"}: the branch's head is that
  commit (7 to 40 hex digits: an abbreviation matches the full id it starts).
A verdict is `current` (GitHub says the claim holds), `stale` (GitHub says it does not) or
`unverifiable` (nothing could be asked, or the answer does not decide: a repository the
operator did not grant the namespace (migration 0035), no token, a network or API error, a rate
limit, a repository the token cannot see). Only an answer that decides gives
`current` or `stale`: a failure can never make a wrong claim look current.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

VERDICTS = ("current", "stale", "unverifiable")
# GitHub's rules: an owner is 1-39 of [A-Za-z0-9-], not starting with '-'; a repository is 1-100
# of [A-Za-z0-9._-] and neither "." nor ".." (which, in the API's URL, would walk up its path).
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
NOT_GRANTED = "repository_not_granted"
QUARANTINED = "quarantined"
SHA_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
# git's own refname rules, the part that matters for a URL path: no control characters, no
# space, none of ~^:?*[\ and no "..", "@{", leading "/" or "-", trailing "/" or ".lock".
_BAD_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|^[/-]|/$|\.lock$|//")
MAX_BRANCH = 255
MAX_RECONCILE_IDS = 100


def valid_repo(repo: Any) -> bool:
    """Whether `repo` is "owner/name" as GitHub allows it."""
    return (isinstance(repo, str) and REPO_RE.fullmatch(repo) is not None
            and repo.split("/", 1)[1] not in (".", ".."))


def check_repo(repo: Any, field: str) -> str:
    """`repo` if valid_repo, else INVALID_INPUT naming `field`."""
    if not valid_repo(repo):
        raise InvalidInput(f"{field} must be \"owner/name\" as GitHub allows it (owner: 1-39 "
                           "of A-Z a-z 0-9 -, not starting with -; name: 1-100 of A-Z a-z 0-9 "
                           ". _ -, not . or ..)", field=field)
    return str(repo)


def github_time(value: Any) -> datetime | None:
    """A time as GitHub writes it (ISO 8601 with its zone, or seconds since the epoch as in a
    push's repository.pushed_at); None when absent or not such a time."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**37:
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and len(value) <= 40:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else None
    return None


def check_claim(claim: Any) -> dict[str, Any] | None:
    """The claim normalised ({"repo", "pr"} or {"repo", "branch", "sha"}), or None.
    INVALID_INPUT naming the field otherwise."""
    if claim is None:
        return None
    if not isinstance(claim, dict):
        raise InvalidInput("claim must be an object", field="claim")
    keys = set(claim)
    repo = check_repo(claim.get("repo"), "claim.repo")
    if keys == {"repo", "pr"}:
        pr = claim["pr"]
        if isinstance(pr, bool) or not isinstance(pr, int) or not 1 <= pr <= 2**31 - 1:
            raise InvalidInput("claim.pr must be a pull request number (a positive integer)",
                               field="claim.pr")
        return {"repo": repo, "pr": pr}
    if keys == {"repo", "branch", "sha"}:
        branch, sha = claim["branch"], claim["sha"]
        if (not isinstance(branch, str) or not 1 <= len(branch) <= MAX_BRANCH
                or _BAD_BRANCH.search(branch)):
            raise InvalidInput("claim.branch must be a branch name (up to 255 characters, "
                               "as git allows)", field="claim.branch")
        if not isinstance(sha, str) or not SHA_RE.fullmatch(sha):
            raise InvalidInput("claim.sha must be a commit id: 7 to 40 hex digits",
                               field="claim.sha")
        return {"repo": repo, "branch": branch, "sha": sha.lower()}
    raise InvalidInput(
        "claim is {\"repo\", \"pr\"} (a merged pull request) or {\"repo\", \"branch\", "
        "\"sha\"} (a branch's head), nothing else", field="claim")


def pr_verdict(pr: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The verdict on a pull-request claim from GitHub's pull request object."""
    evidence = {"state": pr.get("state"), "merged": pr.get("merged"),
                "merged_at": pr.get("merged_at"),
                "merge_commit_sha": pr.get("merge_commit_sha")}
    if pr.get("merged") is True:
        return "current", evidence
    if pr.get("merged") is False:
        return "stale", evidence
    return "unverifiable", {**evidence, "reason": "GitHub's answer did not say whether it "
                                                  "is merged"}


def branch_verdict(claimed_sha: str, branch: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The verdict on a branch-head claim from GitHub's branch object."""
    head = (branch.get("commit") or {}).get("sha")
    if not isinstance(head, str) or not SHA_RE.fullmatch(head):
        return "unverifiable", {"reason": "GitHub's answer named no head commit"}
    verdict = "current" if head.lower().startswith(claimed_sha.lower()) else "stale"
    return verdict, {"head_sha": head.lower()}


class ClaimBackend(ABC):
    """Every method re-checks the caller's namespace scope (FORBIDDEN)."""

    @abstractmethod
    async def due_claims(self, principal: Principal, namespace: str, ids: list[str] | None,
                         recheck_seconds: float) -> dict[str, list[dict[str, Any]]]:
        """The live memories' claims to check: those in `ids` (each must be a memory of the
        namespace with a claim: NOT_FOUND / INVALID_INPUT), or else every claim with no verdict
        or one older than `recheck_seconds`, oldest first, at most MAX_RECONCILE_IDS:
        {"due": [{"memory_id", "claim", "granted"}], "skipped": [{"memory_id", "reason"}]}.
        `granted`: the operator granted the claim's repository to the namespace. A claim of a
        quarantined memory is never due: it is listed in `skipped` (reason QUARANTINED)."""

    @abstractmethod
    async def record_verdicts(self, principal: Principal, namespace: str,
                              verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append one verdict per {"memory_id", "verdict", "evidence", "observed_at"} (source
        'reconcile'; observed_at: the time on GitHub's clock of the state it reflects, or
        None); returns them with their checked_at. FORBIDDEN for a read-only token."""

    @abstractmethod
    async def webhook_verdicts(self, delivery_id: str, event: str, body_sha256: bytes,
                               affected: dict[str, Any]) -> int | None:
        """For a GitHub delivery, once: append a verdict (source 'webhook') to every claim that
        `affected` decides ({"repo", "pr", "merged", "observed_at"} or {"repo", "branch",
        "head_sha", "observed_at"}) in every namespace that granted the repository, unless
        the claim recorded a newer observed_at. None when the delivery id, or a delivery
        with the same body, was handled before; else the number of verdicts written."""

    @abstractmethod
    async def drift_scan(self, principal: Principal, namespaces: list[str] | None, *,
                         limit: int) -> dict[str, Any]:
        """What looks inconsistent in the namespaces (None: every namespace the principal
        sees), written nowhere: near_duplicates, stale_claims, contradictions."""
