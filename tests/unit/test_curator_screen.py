"""The curator's secret / personal-data screen and its answer schema, without a database."""

from __future__ import annotations

import uuid

import pytest

from memhub.curator.client import read_message
from memhub.curator.operations import parse_plan
from memhub.curator.screen import luhn, sensitive


@pytest.mark.parametrize("text, category", [
    ("key sk-ant-api03-AbCdEfGhIjKlMnOp", "secret:api-key"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ", "secret:github-token"),
    ("AKIAIOSFODNN7EXAMPLE in the env", "secret:aws-key"),
    ("-----BEGIN RSA PRIVATE KEY-----", "secret:private-key"),
    ("Authorization: Bearer abcdefghijklmnop0123", "secret:bearer"),
    ("db password: s3cretPassw0rd", "secret:assignment"),
    ("write to ops@example.org", "personal:email"),
    ("call +1 415 555 0132", "personal:phone"),
    ("call (415) 555-0132", "personal:phone"),
    ("card 4242-4242-4242-4242", "personal:card-number"),
    ("SSN 123-45-6789", "personal:ssn"),
    ("IBAN GB82 WEST 1234 5698 7654 32", "personal:iban"),
])
def test_each_kind_of_secret_or_personal_data_is_caught(text, category):
    assert category in sensitive(text)


@pytest.mark.parametrize("text", [
    "Deploys go out on Tuesdays at 10:00",
    "release/2.3 is at a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
    "Version 2.14.3 shipped on 2026-12-05",
    "Retry 5 times, backoff 2s, cap 300s",
    "Build 4111 1111 1111 1112 passed",  # fails Luhn
    "the token lifetime is configurable",
])
def test_ordinary_project_text_passes(text):
    assert sensitive(text) == []


def test_luhn_accepts_test_card_numbers_and_refuses_a_changed_digit():
    assert luhn("4111111111111111") and luhn("5555555555554444")
    assert not luhn("4111111111111112")


def test_a_plan_naming_an_unshown_memory_or_the_same_memory_twice_is_rejected():
    shown = str(uuid.uuid4())
    ok, reason = parse_plan({"operations": [{"op": "UPDATE", "id": shown, "content": "x"}]},
                            {shown})
    assert ok is not None and reason is None
    assert parse_plan({"operations": [{"op": "UPDATE", "id": str(uuid.uuid4()),
                                       "content": "x"}]}, {shown})[0] is None
    assert parse_plan({"operations": [{"op": "MERGE", "ids": [shown, shown], "kind": "FACT",
                                       "content": "x"}]}, {shown})[0] is None


def test_a_message_without_exactly_one_call_of_the_tool_gives_no_input():
    call = {"type": "tool_use", "id": "t", "name": "record_curation", "input": {}}
    assert read_message({"content": [call], "stop_reason": "tool_use"},
                        "record_curation").tool_input == {}
    assert read_message({"content": [call, call], "stop_reason": "tool_use"},
                        "record_curation").reason == "no_tool_call"
    assert read_message({"content": [call], "stop_reason": "max_tokens"},
                        "record_curation").reason == "truncated"
    assert read_message({"content": "text"}, "record_curation").reason == "malformed_response"
