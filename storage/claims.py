"""Claims about a repository carried by memories, and how a check becomes a verdict
(migration 0032; storage/postgres/memories/claims.py; docs/claims.md).

A claim is one of
- {"repo": "owner/name", "pr": 412}: pull request #412 of that repository is merged;
- {"repo": "owner/name", "branch": "release/2.3", "sha": "a1b2c3d"}: the branch's head is that
  commit (7 to 40 hex digits: an abbreviation matches the full id it starts).
A verdict is `current` (GitHub says the claim holds), `stale` (GitHub says it does not) or
`unverifiable` (nothing could be asked, or the answer does not decide: no token, a network or
API error, a rate limit, a repository the token cannot see). Only an answer that decides gives
`current` or `stale`: a failure can never make a wrong claim look current.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

VERDICTS = ("current", "stale", "unverifiable")
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
SHA_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
# git's own refname rules, the part that matters for a URL path: no control characters, no
# space, none of ~^:?*[\ and no "..", "@{", leading "/" or "-", trailing "/" or ".lock".
_BAD_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|^[/-]|/$|\.lock$|//")
MAX_BRANCH = 255
MAX_RECONCILE_IDS = 100


def check_claim(claim: Any) -> dict[str, Any] | None:
    """The claim normalised ({"repo", "pr"} or {"repo", "branch", "sha"}), or None.
    INVALID_INPUT naming the field otherwise."""
    if claim is None:
        return None
    if not isinstance(claim, dict):
        raise InvalidInput("claim must be an object", field="claim")
    keys = set(claim)
    repo = claim.get("repo")
    if not isinstance(repo, str) or not REPO_RE.fullmatch(repo):
        raise InvalidInput("claim.repo must be \"owner/name\" as GitHub spells it",
                           field="claim.repo")
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
                         recheck_seconds: float) -> list[dict[str, Any]]:
        """The live memories' claims to check: those in `ids` (each must be a memory of the
        namespace with a claim: NOT_FOUND / INVALID_INPUT), or else every claim with no verdict
        or one older than `recheck_seconds`, oldest first, at most MAX_RECONCILE_IDS:
        [{"memory_id", "claim"}]."""

    @abstractmethod
    async def record_verdicts(self, principal: Principal, namespace: str,
                              verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append one verdict per {"memory_id", "verdict", "evidence"} (source 'reconcile');
        returns them with their checked_at. FORBIDDEN for a read-only token."""

    @abstractmethod
    async def webhook_verdicts(self, delivery_id: str, event: str,
                               affected: dict[str, Any]) -> int | None:
        """For a GitHub delivery, once: append a verdict (source 'webhook') to every claim in
        every namespace that `affected` decides ({"repo", "pr", "merged"} or {"repo",
        "branch", "head_sha"}). None when the delivery id was handled before, else the
        number of verdicts written."""

    @abstractmethod
    async def drift_scan(self, principal: Principal, namespaces: list[str] | None, *,
                         limit: int) -> dict[str, Any]:
        """What looks inconsistent in the namespaces (None: every namespace the principal
        sees), written nowhere: near_duplicates, stale_claims, contradictions."""
