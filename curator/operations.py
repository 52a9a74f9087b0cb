"""The only answer the curator accepts from the model: a strict schema of operations.

The model's text is untrusted (it read session events and memories anyone could write), so
the schema is what limits what an answer can do: extra fields are refused, every string and
list is bounded, kinds are memhub's, ids are UUIDs, and `shown_ids_only` then checks that
every id names a memory the model was shown. An answer that fails any of this is rejected
whole: zero operations (fail closed), never a best-effort partial reading.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..storage.memory_input import KINDS

TOOL_NAME = "record_curation"
MAX_OPERATIONS = 20
MAX_CONTENT = 4000
MAX_TITLE = 200
MAX_WHY = 300
MAX_TAGS = 8
MAX_MERGED = 10

_UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
MemoryRef = Annotated[str, Field(pattern=_UUID)]
Kind = Literal[KINDS]  # type: ignore[valid-type]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT)]
Title = Annotated[str | None, Field(max_length=MAX_TITLE)]
Tag = Annotated[str, Field(min_length=1, max_length=64)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]
Why = Annotated[str, Field(max_length=MAX_WHY)]
# What a memory answers (storage/memory_input.check_questions' bounds), for search to find it by.
Question = Annotated[str, Field(min_length=1, max_length=300)]
Questions = Annotated[list[Question], Field(max_length=3)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Claim(_Strict):
    """What the model says a statement claims about a repository; storage/claims.check_claim
    decides whether it is one memhub can check."""
    repo: Annotated[str | None, Field(max_length=140)] = None
    pr: Annotated[int | None, Field(ge=1, le=2**31 - 1)] = None
    branch: Annotated[str | None, Field(max_length=255)] = None
    sha: Annotated[str | None, Field(max_length=40)] = None


class Add(_Strict):
    """A new memory."""
    op: Literal["ADD"]
    kind: Kind
    content: Content
    title: Title = None
    tags: Tags = []
    questions: Questions = []
    claim: Claim | None = None
    why: Why = ""


class Update(_Strict):
    """A new revision of one shown memory (the same fact, better worded)."""
    op: Literal["UPDATE"]
    id: MemoryRef
    content: Content
    title: Title = None
    questions: Questions = []
    why: Why = ""


class Merge(_Strict):
    """One new memory replacing several shown ones that say the same thing."""
    op: Literal["MERGE"]
    ids: Annotated[list[MemoryRef], Field(min_length=2, max_length=MAX_MERGED)]
    kind: Kind
    content: Content
    title: Title = None
    tags: Tags = []
    questions: Questions = []
    why: Why = ""


class Supersede(_Strict):
    """One new memory replacing one shown memory the session proved outdated."""
    op: Literal["SUPERSEDE"]
    id: MemoryRef
    kind: Kind
    content: Content
    title: Title = None
    tags: Tags = []
    questions: Questions = []
    why: Why = ""


class Noop(_Strict):
    """Nothing worth keeping (or it is already recorded)."""
    op: Literal["NOOP"]
    why: Why = ""


Operation = Annotated[Add | Update | Merge | Supersede | Noop, Field(discriminator="op")]


class Plan(_Strict):
    operations: Annotated[list[Operation], Field(max_length=MAX_OPERATIONS)]


def tool_definition() -> dict:
    """The tool the model is forced to call: its input_schema is the Plan schema."""
    return {
        "name": TOOL_NAME,
        "description": "Record the curation of the session: the operations to apply to the "
                       "project's memory (an empty list when nothing is worth keeping).",
        "input_schema": Plan.model_json_schema(),
    }


def targets(op: Add | Update | Merge | Supersede | Noop) -> list[str]:
    """The existing memories an operation changes (lower-case ids)."""
    if isinstance(op, Update | Supersede):
        return [op.id.lower()]
    if isinstance(op, Merge):
        return [i.lower() for i in op.ids]
    return []


def parse_plan(raw: object, shown: set[str]) -> tuple[Plan | None, str | None]:
    """(plan, None), or (None, reason) when the answer is not one to apply at all."""
    if not isinstance(raw, dict):
        return None, "malformed: the tool input is not an object"
    try:
        plan = Plan.model_validate(raw)
    except ValidationError as exc:
        return None, f"malformed: {exc.error_count()} schema violation(s)"
    seen: set[str] = set()
    for op in plan.operations:
        ids = targets(op)
        if any(i not in shown for i in ids):
            return None, "an operation names a memory the model was not shown"
        if len(set(ids)) != len(ids) or seen & set(ids):
            return None, "two operations change the same memory"
        seen |= set(ids)
    return plan, None
