"""A namespace's profile (`namespace_init`): what a project declares about itself, validated
here, at the storage boundary, before anything is stored or compared.

Every key is optional; a namespace without a profile (or with an empty one) behaves exactly
as every namespace did before profiles existed:

- `description`: what the project is (text a model will read: sanitized, screened, returned
  wrapped as untrusted data).
- `context_quota`: {KIND: share 0-1} replacing memory_context's default first-pass shares
  (storage/context_pack.py KIND_QUOTA) for this namespace; a kind left out gets no share of
  its own (it can still fill what the others leave).
- `reverify_days`: {KIND: days} after which a memory of that kind needs re-verification.
- `tool_profile`: the tool profile a client of this project is advised to use ('core' or
  'full'); a token's own profile (api_tokens.tool_profile) is what the server enforces.
- `intent_gate`: 'off' (default) or 'on': supersede and forget preview first and apply on
  confirmation (storage/postgres/work/gate.py, docs/intent-gate.md).
- `tier2`: 'off' (default) or 'on', only with the gate on: the curator's model reads each
  preview's change against the memories it touches and adds its concerns
  (usecases/gate_review.py).

Unknown keys are refused (INVALID_INPUT naming the key): a misspelt switch must not be
stored as if it did something.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ..errors import InvalidInput
from .memory_input import KINDS
from .principal import TOOL_PROFILES
from .sanitize import sanitize_text, screen

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

DESCRIPTION_MAX = 2000
REVERIFY_DAYS_MAX = 3650  # ten years
EXPECTED_VERSION_MAX = 2**31 - 1

Kind = Literal[KINDS]  # type: ignore[valid-type]
Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Days = Annotated[int, Field(ge=1, le=REVERIFY_DAYS_MAX)]


class NamespaceProfile(BaseModel):
    """The profile's shape and bounds. Strict: no coercion (a string is not a number, a bool
    is not a day count), no unknown key."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    description: Annotated[str, Field(max_length=DESCRIPTION_MAX)] | None = None
    context_quota: dict[Kind, Share] | None = None
    reverify_days: dict[Kind, Days] | None = None
    tool_profile: Literal[TOOL_PROFILES] | None = None  # type: ignore[valid-type]
    intent_gate: Literal["off", "on"] = "off"
    tier2: Literal["off", "on"] = "off"

    @field_validator("description")
    @classmethod
    def _sanitized(cls, value: str | None) -> str | None:
        if value is None:
            return None
        cleaned = sanitize_text(value).strip()
        if not cleaned:
            raise ValueError("must not be empty (leave it out instead)")
        if len(cleaned) > DESCRIPTION_MAX:
            raise ValueError(f"is longer than {DESCRIPTION_MAX} characters once sanitized")
        return cleaned

    @field_validator("context_quota")
    @classmethod
    def _shares(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is None:
            return None
        total = math.fsum(value.values())
        if not 0.0 < total <= 1.0 + 1e-9:
            raise ValueError("the shares must add up to more than 0 and at most 1")
        return value

    @field_validator("tier2")
    @classmethod
    def _tier2_needs_the_gate(cls, value: str, info: ValidationInfo) -> str:
        # Tier 2 reviews the gate's previews: without the gate it would be a stored switch
        # that does nothing.
        if value == "on" and info.data.get("intent_gate") != "on":
            raise ValueError("'on' needs intent_gate 'on'")
        return value

    @field_validator("reverify_days")
    @classmethod
    def _no_empty_days(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        return value or None  # {} says what leaving it out says: one stored form for both


PROFILE_KEYS = tuple(NamespaceProfile.model_fields)


def check_profile(raw: Any) -> dict[str, Any]:
    """The profile as stored: validated, description sanitized, keys at their default left out
    (so `{}` and `{"intent_gate": "off"}` are the same profile).

    Raises InvalidInput naming the offending key (`field` = "profile.<key>...") for an unknown
    key, a value of the wrong type or out of bounds, or a description the injection screen
    flags (details: reasons)."""
    if not isinstance(raw, dict):
        raise InvalidInput("profile must be an object", field="profile")
    try:
        model = NamespaceProfile.model_validate(raw)
    except ValidationError as exc:
        raise _invalid(exc) from None
    if model.description is not None:
        found = screen(model.description)
        if found.quarantined:
            raise InvalidInput(
                "profile.description looks like instructions to a model; a profile is read by "
                "every client of the namespace, so it is refused rather than stored",
                remedy="Describe the project as plain data (what it is, what it holds).",
                field="profile.description", reasons=list(found.reasons))
    return model.model_dump(exclude_defaults=True)


def _invalid(exc: ValidationError) -> InvalidInput:
    error = exc.errors(include_url=False, include_input=False)[0]
    loc = [str(part)[:64] for part in error["loc"] if part != "[key]"]
    path = ".".join(["profile", *loc])
    if error["type"] == "extra_forbidden":
        return InvalidInput(
            f"{path}: unknown key {loc[-1]!r}; a profile's keys are {', '.join(PROFILE_KEYS)}",
            field=path, key=loc[-1])
    if error["loc"] and error["loc"][-1] == "[key]":
        return InvalidInput(f"{path}: not a kind ({', '.join(KINDS)})", field=path)
    return InvalidInput(f"{path}: {error['msg'].removeprefix('Value error, ')}", field=path)


def check_expected_version(value: Any) -> int | None:
    """None (last writer wins), or the version read: 0 for a namespace not initialised."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 0 <= value <= EXPECTED_VERSION_MAX:
        raise InvalidInput("expected_version must be an integer >= 0 (0: not initialised yet)",
                           field="expected_version")
    return value


class ProfileBackend(ABC):
    """The profile area of the storage boundary."""

    @abstractmethod
    async def namespace_init(
        self, principal: Principal, namespace: str, profile: Any, *,
        expected_version: int | None = None, client_request_id: str | None = None,
    ) -> dict[str, Any]:
        """Declare `namespace`'s profile, idempotently: {"outcome": "created" | "updated" |
        "unchanged" | "replayed", "namespace", "initialised", "profile", "version",
        "created_at", "updated_at", "updated_by"}. The same profile again is "unchanged" (no
        new version); another replaces it (version + 1, updated_by = the caller's surface).
        With `expected_version` the write applies only while the stored version is that one
        (0: not initialised); without it the last writer wins.

        Raises INVALID_INPUT (see check_profile), FORBIDDEN (scope, or a read-only token),
        CONFLICT (expected_version is not the stored version: details current_version),
        IDEMPOTENCY_MISMATCH, RETRYABLE, UNKNOWN_OUTCOME."""

    @abstractmethod
    async def namespace_profile(self, principal: Principal, namespace: str) -> dict[str, Any]:
        """The namespace's profile as namespace_init answers it (without `outcome`); a
        namespace never initialised answers initialised=false, profile {} and version 0.
        Raises INVALID_INPUT, FORBIDDEN."""
