"""`session_bootstrap`'s use case: its steps, run server-side in a fixed order.

Correct use of memhub at the start of a task is a sequence: learn which database answered,
read the project's profile, check health, pick up what was handed over, see what changed, see
what is stale, load context, open a session. Left to the client, a skipped step leaves no
trace. Here each step runs in order and reports itself in `steps_run` (ok / degraded /
skipped, and its time); a step that fails degrades itself, never the call, and later steps
still run (usecases/steps.py).

The answer fits `budget_tokens` (counted as memory_context counts: its exact JSON). Memories
come first and diagnostics last: context is packed into the budget less the other sections'
skeleton (their counts and cursors, without their lists), and `fit` then trims the lists
(changes, items due, handoffs) before it takes a memory back, so the smallest budget still
carries the memories that fit.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CursorExpired
from ..runtime import Runtime
from ..storage.context_pack import count_tokens, dumps
from ..storage.principal import Principal
from .model_status import scoped_model_status
from .steps import Skipped, StepLog

STEPS = ("database", "profile", "health", "handoffs", "changes", "reverification", "context",
         "session", "mark")
HANDOFFS_SHOWN = 5
REVERIFY_SHOWN = 10
CHANGES_PAGE = 200
CHANGES_PAGES_MAX = 5  # a summary counts at most 1,000 changes; the rest is one cursor away
CHANGES_SHOWN = 10
CONTEXT_MIN_TOKENS = 60  # below this a pack holds nothing useful: the step is skipped
# Room kept for the session and the step records, written after the context is packed.
TAIL_RESERVE = 260
# What a diagnostic section keeps when the budget is short (its whole is one tool away:
# stats, namespace_profile): a healthy server's details give way before any list or memory.
COMPACT = {"health": ("degraded", "attention"),
           "database": ("instance_id", "migration_level", "embedded", "pooled"),
           "profile": ("initialised", "version", "profile")}


@dataclass
class Bootstrap:
    rt: Runtime
    principal: Principal
    namespace: str
    query: str | None
    also: list[str] | None
    budget_tokens: int
    title: str | None
    client_request_id: str | None
    answer: dict[str, Any] = field(default_factory=dict)
    steps: StepLog = field(default_factory=StepLog)
    feed_cursor: str | None = None  # where the changes step read to

    async def step(self, name: str, fn: Callable[[], Awaitable[Any]]) -> None:
        """Run one step; its result (or None) goes in answer[name], its record in steps."""
        self.answer[name] = await self.steps.run(name, fn)

    # --- the steps, in order ------------------------------------------------------------
    async def database(self) -> dict[str, Any]:
        return await which_database(self.rt, self.principal, self.namespace)

    async def profile(self) -> dict[str, Any]:
        return await self.rt.storage().namespace_profile(self.principal, self.namespace)

    async def health(self) -> dict[str, Any]:
        backlog = await self.rt.storage().embedding_backlog(self.principal, self.namespace)
        embedder = self.rt.embedder
        model = (scoped_model_status(embedder.status()) if embedder is not None
                 else {"state": "disabled"})
        attention = []
        if model.get("state") != "ready":
            attention.append(f"embedding model {model.get('state')}: searches are lexical "
                             "until it is ready")
        if backlog["dead"]:
            attention.append(f"{backlog['dead']} memories could not be embedded (dead jobs)")
        return {"model": model, "embedding_queue": backlog, "degraded": bool(attention),
                "attention": attention}

    async def handoffs(self) -> dict[str, Any]:
        return await self.rt.storage().open_handoffs(self.principal, self.namespace,
                                                     limit=HANDOFFS_SHOWN)

    async def changes(self) -> dict[str, Any]:
        storage = self.rt.storage()
        mark = await storage.bootstrap_mark(self.principal, self.namespace)
        if mark is None:
            return await self.first_changes()
        cursor, has_more = mark["cursor"], False
        counts: Counter[str] = Counter()
        recent: list[dict[str, Any]] = []
        for _ in range(CHANGES_PAGES_MAX):
            try:
                page = await storage.memory_changes(self.principal, self.namespace,
                                                    cursor=cursor, limit=CHANGES_PAGE)
            except CursorExpired:
                if cursor != mark["cursor"]:
                    raise
                # Retention went past the mark: counting "since" it is no longer possible, and
                # a mark left there would fail every later bootstrap. Start again as a first.
                return {**await self.first_changes(), "mark_expired": True}
            counts.update(change["what"] for change in page["changes"])
            recent = (recent + page["changes"])[-CHANGES_SHOWN:]
            cursor, has_more = page["next_cursor"], page["has_more"]
            if not has_more:
                break
        self.feed_cursor = cursor
        return {"first_bootstrap": False, "since": mark["marked_at"], "counts": dict(counts),
                "recent": recent, "has_more": has_more, "next_cursor": cursor}

    async def first_changes(self) -> dict[str, Any]:
        """Nothing to count "since": what is there instead, up to where the mark goes."""
        first = await self.rt.storage().bootstrap_overview(self.principal, self.namespace,
                                                           recent=CHANGES_SHOWN)
        self.feed_cursor = first["cursor"]
        return {"first_bootstrap": True, "since": None, "counts": first["counts"],
                "recent": first["recent"], "has_more": False, "next_cursor": self.feed_cursor,
                "active_memories": first["active_memories"]}

    async def reverification(self) -> dict[str, Any]:
        return await self.rt.storage().reverification_due(self.principal, self.namespace,
                                                          limit=REVERIFY_SHOWN)

    async def context(self) -> dict[str, Any]:
        room = self.budget_tokens - self.skeleton_tokens() - TAIL_RESERVE
        if room < CONTEXT_MIN_TOKENS:
            raise Skipped(f"the other sections' counts used the budget ({self.budget_tokens} "
                          "tokens): call memory_context for more")
        storage = self.rt.storage()
        pack = await storage.context(self.principal, self.namespace, self.query,
                                     also=self.also,
                                     budget_tokens=room)
        if self.query is not None and not pack["memories"]:
            # Nothing passed the retrieval guard: the start of a task still wants its bearings,
            # so the newest memories are served, labelled as not matching the query.
            pack = await storage.context(self.principal, self.namespace, None, budget_tokens=room)
            pack["query_matched"] = False
        return pack

    async def session(self) -> dict[str, Any]:
        if self.principal.read_only:
            raise Skipped("read-only token: no session is opened")
        title = self.title or f"{self.principal.surface} session"
        created = await self.rt.storage().session_create(
            self.principal, self.namespace, title=title,
            client_request_id=self.client_request_id)
        session = created["session"]
        return {"id": session["id"], "outcome": created["outcome"], "title": session["title"]}

    async def mark(self) -> dict[str, Any]:
        if self.feed_cursor is None:
            raise Skipped("the changes step did not run to the end: the mark stays where it was")
        if self.principal.read_only:
            raise Skipped("read-only token: the mark is not moved (changes are counted from "
                          "where it was)")
        await self.rt.storage().save_bootstrap_mark(self.principal, self.namespace,
                                                    self.feed_cursor)
        return {"moved_to": "changes.next_cursor"}  # the cursor once, not twice

    async def run(self) -> dict[str, Any]:
        for name in STEPS:
            await self.step(name, getattr(self, name))
        return self.fit()

    # --- the budget ---------------------------------------------------------------------
    def document(self, trimmed: int = 0, used: int | None = None) -> dict[str, Any]:
        # Counted with tokens_used at the budget's value: the final, smaller figure never
        # takes more tokens than the one counted.
        return {"namespace": self.namespace, **self.answer, "steps_run": self.steps.records,
                "budget_tokens": self.budget_tokens,
                "tokens_used": self.budget_tokens if used is None else used,
                "trimmed_items": trimmed}

    def tokens(self, trimmed: int = 0) -> int:
        return count_tokens(dumps(self.document(trimmed)))

    def skeleton_tokens(self) -> int:
        """The answer's tokens with every list but the memories dropped: what the context may
        not use, since only those lists give way to it."""
        bare = copy.copy(self)
        bare.answer = copy.deepcopy(self.answer)
        while bare._drop_one(keep_memories=True):
            pass
        return bare.tokens()

    def fit(self) -> dict[str, Any]:
        """The answer within the budget: while it is over, drop the least useful item left
        (a healthy section's details (`compacted: true`), the oldest listed change, the last
        item due for re-verification, the last handoff shown, the profile's description, and
        only then the last context memory). Counts
        and cursors stay, so nothing dropped is out of reach: each section says how to read
        the rest."""
        trimmed = 0
        while (used := self.tokens(trimmed)) > self.budget_tokens:
            if not self._drop_one():
                break  # only the skeleton is left (tools/bootstrap.MIN_BUDGET_TOKENS leaves room)
            trimmed += 1
        return self.document(trimmed, used)

    def _drop_one(self, keep_memories: bool = False) -> bool:
        for section, keep in COMPACT.items():
            full = self.answer.get(section)
            if full and not full.get("compacted") and not full.get("degraded"):
                self.answer[section] = {**{k: full[k] for k in keep if full.get(k) is not None},
                                        "compacted": True}
                return True
        changes = self.answer.get("changes")
        if changes and changes.get("recent"):
            changes["recent"].pop(0)
            return True
        due = self.answer.get("reverification")
        if due and due.get("memories"):
            due["memories"].pop()
            return True
        handoffs = self.answer.get("handoffs")
        if handoffs and handoffs.get("handoffs"):
            handoffs["handoffs"].pop()
            return True
        profile = (self.answer.get("profile") or {}).get("profile") or {}
        if "description" in profile:
            del profile["description"]  # namespace_profile reads it whole
            profile["description_omitted"] = True
            return True
        context = self.answer.get("context")
        if not keep_memories and context and context.get("memories"):
            context["memories"].pop()
            context["omitted"] = context.get("omitted", 0) + 1
            return True
        return False


async def which_database(rt: Runtime, principal: Principal, namespace: str) -> dict[str, Any]:
    """Which memhub database answered (two clients seeing one instance_id share one memory),
    and how this process reaches it: the `database` step of the sequence tools."""
    identity = await rt.storage().database_identity(principal, namespace)
    pooled = identity.pop("pooled")  # answered last, after what only the process knows
    return {**identity, "memhub_version": rt.version,
            "embedded": rt.settings.database_url is None, "pooled": pooled}


async def bootstrap(rt: Runtime, principal: Principal, namespace: str, *, query: str | None,
                    budget_tokens: int, title: str | None,
                    client_request_id: str | None,
                    also: list[str] | None = None) -> dict[str, Any]:
    """Every step, in order, for arguments already checked; the answer within `budget_tokens`.
    A step's failure is in its record (steps_run), never raised."""
    return await Bootstrap(rt, principal, namespace, query=query, also=also,
                           budget_tokens=budget_tokens,
                           title=title, client_request_id=client_request_id).run()

