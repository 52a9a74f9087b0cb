"""The intent gate's inputs, validated before any connection is taken: intents, outcomes,
skills and their triggers (docs/intent-gate.md).

What intent_open does is bounded too: a namespace holds at most SKILLS_MAX skills whose
triggers total at most TRIGGERS_BYTES_MAX bytes (each call evaluates them all), and an answer
carries the guidance of at most GUIDANCE_SKILLS_MAX matching skills in at most
GUIDANCE_CHARS_MAX characters, naming the matching skills it left out (`select_guidance`).

A trigger is a JSON Logic rule over the intent ({"kind", "tags", "text"}), evaluated by the
`panzi-json-logic` library with only the whitelisted operators handed to it. The rule is
checked here first (operators, `var` names, depth, size) so that a rule that would not run,
or would run something else, is refused with INVALID_INPUT naming the field and never stored.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_logic
from json_logic.builtins import BUILTINS

from ..errors import InvalidInput, TooLarge
from .memory_input import check_tags
from .sanitize import sanitize_text, screen
from .search import MAX_QUERY_CHARS

INTENT_TEXT_MAX = 2000
INTENT_KIND_MAX = 64
OUTCOME_MAX = 2000
GUIDANCE_MAX = 4000
TRIGGER_BYTES_MAX = 4096
TRIGGER_DEPTH_MAX = 8
SKILLS_MAX = 200
# All of a namespace's triggers together, in bytes as PostgreSQL prints them: every
# intent_open evaluates them all, in the event loop, at a cost about proportional to their
# size (bench/gate_triggers.py), so this bounds that work per call. 200 triggers of 160 bytes
# fit.
TRIGGERS_BYTES_MAX = 32768
# One intent_open's guidance: a whole skill's guidance or none of it (a cut rule can read as
# another rule), the first matching skills by name that fit.
GUIDANCE_SKILLS_MAX = 10
GUIDANCE_CHARS_MAX = 8000  # two skills of the longest guidance
OMITTED_NAMES_MAX = 50
SKILL_VERSION_MAX = 2**31 - 1
SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# The intent fields a trigger may read.
INTENT_FIELDS = ("kind", "tags", "text")


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _contains(_data: Any, haystack: Any = None, needle: Any = None, *_: Any) -> bool:
    """Case-insensitive substring (text) or membership (tags): {"contains": [where, what]}."""
    if isinstance(haystack, str) and isinstance(needle, str):
        return needle.lower() in haystack.lower()
    if isinstance(haystack, list):
        return _lower(needle) in [_lower(item) for item in haystack]
    return False


# The whitelist: boolean logic, equality, membership, field access and a substring test.
# Nothing that computes, formats or reaches outside the intent.
OPERATIONS: dict[str, Any] = {
    "and": None, "or": None, "if": None,  # control forms the library evaluates itself
    **{op: BUILTINS[op] for op in ("!", "!!", "==", "!=", "in", "var")},
    "contains": _contains,
}
CALLABLE_OPERATIONS = {k: v for k, v in OPERATIONS.items() if v is not None}


def check_trigger(rule: Any) -> Any:
    """The rule as stored, or INVALID_INPUT (field "trigger...") / TOO_LARGE."""
    try:
        encoded = json.dumps(rule, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("trigger must be JSON", field="trigger") from None
    if len(encoded.encode()) > TRIGGER_BYTES_MAX:
        raise TooLarge(f"trigger is larger than {TRIGGER_BYTES_MAX} bytes", field="trigger",
                       limit=TRIGGER_BYTES_MAX)
    if not isinstance(rule, dict):
        raise InvalidInput("trigger must be a JSON Logic rule (an object with one operator)",
                           field="trigger")
    _check_node(rule, "trigger", 1)
    try:
        evaluate(rule, {"kind": None, "tags": [], "text": ""})
    except Exception as exc:  # noqa: BLE001 - any library failure means the rule is unusable
        raise InvalidInput(f"trigger does not evaluate: {type(exc).__name__}",
                           field="trigger") from None
    return rule


def _check_node(node: Any, path: str, depth: int) -> None:
    if depth > TRIGGER_DEPTH_MAX:
        raise InvalidInput(f"{path}: nested deeper than {TRIGGER_DEPTH_MAX}", field=path)
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_node(item, f"{path}[{i}]", depth + 1)
        return
    if not isinstance(node, dict):
        if isinstance(node, float) and node != node:  # pragma: no cover - json refused NaN
            raise InvalidInput(f"{path}: not a number", field=path)
        return
    if len(node) != 1:
        raise InvalidInput(f"{path}: a rule is an object with exactly one operator", field=path)
    (op, args), = node.items()
    if op not in OPERATIONS:
        raise InvalidInput(
            f"{path}: operator {op!r} is not allowed; allowed: {', '.join(OPERATIONS)}",
            field=path, operator=op[:64])
    if op == "var":
        name = args[0] if isinstance(args, list) and args else args
        if name not in INTENT_FIELDS:
            raise InvalidInput(f"{path}: var reads one of {', '.join(INTENT_FIELDS)}",
                               field=path)
        return
    _check_node(args, f"{path}.{op}", depth + 1)


def evaluate(rule: Any, intent: dict[str, Any]) -> bool:
    """Whether `rule` matches `intent`, with the whitelisted operators only."""
    return bool(json_logic.jsonLogic(rule, intent, CALLABLE_OPERATIONS))


def check_skill_name(name: Any) -> str:
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        raise InvalidInput("name must be 1-64 of a-z 0-9 . _ - (starting with a letter or digit)",
                           field="name")
    return name


def check_guidance(text: Any) -> str:
    cleaned = _text(text, "guidance", GUIDANCE_MAX)
    found = screen(cleaned)
    if found.quarantined:
        # Guidance is shown to every agent whose intent matches: it must read as project
        # practice, not as instructions to override the model.
        raise InvalidInput("guidance looks like instructions to a model and is refused",
                           field="guidance", reasons=list(found.reasons))
    return cleaned


def check_intent(intent: Any) -> dict[str, Any]:
    """{"text", "kind", "tags"} from the tool's `intent` object (text required)."""
    if not isinstance(intent, dict):
        raise InvalidInput("intent must be an object {text, kind?, tags?}", field="intent")
    unknown = set(intent) - set(INTENT_FIELDS)
    if unknown:
        raise InvalidInput(f"intent: unknown key {sorted(unknown)[0][:64]!r}",
                           field="intent")
    kind = intent.get("kind")
    if kind is not None:
        kind = _text(kind, "intent.kind", INTENT_KIND_MAX).lower()
    tags = check_tags(intent.get("tags"))
    return {"text": _text(intent.get("text"), "intent.text", INTENT_TEXT_MAX), "kind": kind,
            "tags": tags}


def check_skill_version(value: Any) -> int | None:
    """None (the last definition wins), or the version read: 0 for a skill not defined yet."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 0 <= value <= SKILL_VERSION_MAX:
        raise InvalidInput("expected_version must be an integer >= 0 (0: not defined yet)",
                           field="expected_version")
    return value


def check_outcome(outcome: Any) -> str:
    return _text(outcome, "outcome", OUTCOME_MAX)


def _text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field)
    if len(value) > limit:
        raise TooLarge(f"{field} is longer than {limit} characters", field=field, limit=limit)
    cleaned = sanitize_text(value).strip()
    if not cleaned:
        raise InvalidInput(f"{field} must not be empty", field=field)
    return cleaned


def lookup_text(text: str) -> str:
    """The part of an intent's text that chooses its memories: all of it up to the search's
    query limit, else its first MAX_QUERY_CHARS characters cut at a word boundary."""
    if len(text) <= MAX_QUERY_CHARS:
        return text
    head = text[:MAX_QUERY_CHARS]
    if not (text[MAX_QUERY_CHARS].isspace() or head[-1].isspace()):
        words = head.rsplit(None, 1)  # not half a word: it would match nothing, or wrongly
        if len(words) == 2:
            head = words[0]
    return head.rstrip()


def select_guidance(skills: tuple[dict[str, Any], ...] | list[dict[str, Any]],
                    intent: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(the guidance an intent_open returns, what it left out or None). Every skill's trigger
    is evaluated (at most SKILLS_MAX of them); of those that match, in name order, each whole
    guidance that fits within GUIDANCE_SKILLS_MAX skills and GUIDANCE_CHARS_MAX characters is
    returned, and the others are counted and named (the first OMITTED_NAMES_MAX) for
    skill_get."""
    shown: list[dict[str, Any]] = []
    left_out: list[str] = []
    used = 0
    for skill in skills:
        if not evaluate(skill["trigger"], intent):
            continue
        size = len(skill["guidance"])
        if len(shown) < GUIDANCE_SKILLS_MAX and used + size <= GUIDANCE_CHARS_MAX:
            shown.append({"skill": skill["name"], "version": skill["version"],
                          "guidance": skill["guidance"]})
            used += size
        else:
            left_out.append(skill["name"])
    if not left_out:
        return shown, None
    return shown, {"count": len(left_out), "skills": left_out[:OMITTED_NAMES_MAX]}
