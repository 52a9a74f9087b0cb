"""The intent gate's trigger language and confirmation tokens, without a database."""

from __future__ import annotations

import pytest

from memhub.errors import (
    ConfirmationExpired,
    ConfirmationInvalid,
    ConfirmationMismatch,
    InvalidInput,
    TooLarge,
)
from memhub.storage import gate_confirm
from memhub.storage.gate_input import (
    GUIDANCE_CHARS_MAX,
    GUIDANCE_SKILLS_MAX,
    INTENT_TEXT_MAX,
    OMITTED_NAMES_MAX,
    check_intent,
    check_trigger,
    evaluate,
    lookup_text,
    select_guidance,
)
from memhub.storage.search import MAX_QUERY_CHARS
from memhub.tools.gate import Intent
from tests.support.source import ROOT

INTENT = {"kind": "deploy", "tags": ["prod", "api"], "text": "Roll out the billing API"}


@pytest.mark.parametrize(("rule", "expected"), [
    ({"==": [{"var": "kind"}, "deploy"]}, True),
    ({"!=": [{"var": "kind"}, "deploy"]}, False),
    ({"in": ["prod", {"var": "tags"}]}, True),
    ({"contains": [{"var": "tags"}, "PROD"]}, True),
    ({"contains": [{"var": "text"}, "billing api"]}, True),
    ({"and": [{"!": {"contains": [{"var": "text"}, "rollback"]}},
              {"or": [{"==": [{"var": "kind"}, "x"]}, {"!!": {"var": "tags"}}]}]}, True),
    ({"if": [{"==": [{"var": "kind"}, "deploy"]}, False, True]}, False),
])
def test_whitelisted_rules_evaluate_over_kind_tags_and_text(rule, expected):
    assert evaluate(check_trigger(rule), INTENT) is expected


@pytest.mark.parametrize("rule", [
    {"log": 1}, {"cat": ["a", "b"]}, {"+": [1, 2]}, {"merge": [[1]]}, {"substr": ["ab", 1]},
    {"var": "secret"}, {"var": {"cat": ["te", "xt"]}}, {"some": [[1], {"var": ""}]},
    {"a.b": [1]}, {"==": [1, 1], "!=": [1, 2]}, {}, [1, 2], "text", 3,
    {"map": [{"var": "tags"}, {"==": [1, 1]}]}, {"filter": [{"var": "tags"}, True]},
    {"reduce": [{"var": "tags"}, True, False]},
])
def test_a_rule_outside_the_whitelist_is_refused(rule):
    with pytest.raises(InvalidInput) as err:
        check_trigger(rule)
    assert err.value.details["field"].startswith("trigger")


def test_depth_and_size_are_bounded():
    deep: dict = {"!!": True}
    for _ in range(10):
        deep = {"!": deep}
    with pytest.raises(InvalidInput):
        check_trigger(deep)
    with pytest.raises(TooLarge):
        check_trigger({"in": ["x" * 5000, {"var": "text"}]})


def test_an_intent_needs_text_and_knows_only_its_keys():
    assert check_intent({"text": " go ", "kind": "Deploy"}) == {"text": "go", "kind": "deploy",
                                                                  "tags": []}
    with pytest.raises(InvalidInput):
        check_intent({"kind": "deploy"})
    with pytest.raises(InvalidInput):
        check_intent({"text": "x", "owner": "me"})


SECRET = b"k" * 32
ARGS = {"id": "m1", "reason": "r"}


def test_a_confirmation_binds_namespace_token_tool_and_arguments():
    token = gate_confirm.issue(SECRET, "acme", 7, "memory_forget", ARGS)
    assert gate_confirm.verify(SECRET, token, "acme", 7, "memory_forget", ARGS, 60)
    for ns, tok, tool in (("beta", 7, "memory_forget"), ("acme", 8, "memory_forget"),
                          ("acme", 7, "memory_remember")):
        with pytest.raises(ConfirmationInvalid):
            gate_confirm.verify(SECRET, token, ns, tok, tool, ARGS, 60)
    with pytest.raises(ConfirmationMismatch):
        gate_confirm.verify(SECRET, token, "acme", 7, "memory_forget", {**ARGS, "reason": "s"}, 60)
    with pytest.raises(ConfirmationInvalid):
        gate_confirm.verify(b"x" * 32, token, "acme", 7, "memory_forget", ARGS, 60)
    with pytest.raises(ConfirmationExpired):
        gate_confirm.verify(SECRET, token, "acme", 7, "memory_forget", ARGS, -1)


def test_the_intent_text_limit_is_the_same_in_the_code_the_tool_and_the_docs():
    said = f"1-{INTENT_TEXT_MAX} chars"
    assert said in Intent.__metadata__[0].description
    assert said in (ROOT / "docs" / "intent-gate.md").read_text()
    check_intent({"text": "x" * INTENT_TEXT_MAX})
    with pytest.raises(TooLarge):
        check_intent({"text": "x" * (INTENT_TEXT_MAX + 1)})


def test_the_memories_are_looked_up_by_the_texts_start_cut_between_words():
    assert lookup_text("deploy now") == "deploy now"
    words = "rotate " * 400
    cut = lookup_text(words.strip())
    assert len(cut) <= MAX_QUERY_CHARS and cut.endswith("rotate")
    assert lookup_text("x" * 1500) == "x" * MAX_QUERY_CHARS  # one long word: cut anyway


def skill(name: str, size: int, trigger: dict | None = None) -> dict:
    return {"name": name, "version": 1, "guidance": "g" * size,
            "trigger": trigger or {"contains": [{"var": "text"}, "deploy"]}}


def test_guidance_is_whole_skills_in_name_order_within_the_count_and_character_bounds():
    big = GUIDANCE_CHARS_MAX // 2 - 10
    skills = [skill("a", big), skill("b", big), skill("c", big), skill("d", 10),
              skill("e", 10, {"==": [{"var": "kind"}, "never"]})]
    shown, omitted = select_guidance(skills, INTENT | {"text": "deploy it"})
    assert [g["skill"] for g in shown] == ["a", "b", "d"]  # "c" does not fit, "d" does
    assert omitted == {"count": 1, "skills": ["c"]}
    many = [skill(f"s{i:03d}", 1) for i in range(GUIDANCE_SKILLS_MAX + OMITTED_NAMES_MAX + 5)]
    shown, omitted = select_guidance(many, INTENT | {"text": "deploy it"})
    assert len(shown) == GUIDANCE_SKILLS_MAX
    assert omitted is not None and omitted["count"] == OMITTED_NAMES_MAX + 5
    assert omitted["skills"] == [s["name"] for s in many[GUIDANCE_SKILLS_MAX:]][
        :OMITTED_NAMES_MAX]
    assert select_guidance(skills[:1], INTENT | {"text": "deploy"})[1] is None
