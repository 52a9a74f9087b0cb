"""JSON from outside the process is parsed with its nesting bounded (memhub/bounded_json.py):
64 levels are read, a 65th is malformed, and a document past Python's own parser is malformed
too, never a RecursionError; each reader of outside JSON that has no test of its own through
HTTP treats such a document as the malformed input it already refuses."""

from __future__ import annotations

import pytest

from memhub import bounded_json
from memhub.errors import InvalidInput
from memhub.gateway.mcp_request import valid_request_id
from memhub.gateway.query_prefetch import search_texts
from memhub.storage.transfer_format import parse_line
from memhub.tools.json_arguments import decode_stringified
from tests.support.deep_json import PAST_THE_PARSER


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_sixty_four_levels_are_read_and_a_sixty_fifth_is_refused():
    assert bounded_json.loads(nested(64)) is not None
    assert bounded_json.loads('{"a": ' * 63 + "[]" + "}" * 63) is not None
    with pytest.raises(bounded_json.TooDeep):
        bounded_json.loads(nested(65))
    with pytest.raises(bounded_json.TooDeep):
        bounded_json.loads('{"a": ' * 64 + "[]" + "}" * 64)


def test_a_document_past_the_parser_is_too_deep_not_a_recursion_error():
    with pytest.raises(bounded_json.TooDeep):
        bounded_json.loads(nested(PAST_THE_PARSER))


def test_too_deep_is_malformed_json_to_a_reader_that_refuses_what_is_not_json():
    with pytest.raises(ValueError):
        bounded_json.loads(nested(65).encode())


@pytest.mark.parametrize("depth", [65, PAST_THE_PARSER])
def test_an_import_line_nested_too_deeply_is_refused_as_invalid_input(depth):
    with pytest.raises(InvalidInput):
        parse_line(2, ('{"record": "memory", "x": ' + nested(depth) + "}\n").encode())


@pytest.mark.parametrize("depth", [65, PAST_THE_PARSER])
def test_a_stringified_argument_nested_too_deeply_is_left_as_the_string_it_was(depth):
    arguments = {"payload": nested(depth)}
    assert decode_stringified(arguments, {"payload": {"type": "array"}}) == []
    assert arguments["payload"] == nested(depth)


@pytest.mark.parametrize("depth", [65, PAST_THE_PARSER])
def test_a_request_nested_too_deeply_is_left_to_the_mcp_layer_by_the_gateway(depth):
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
            '"memory_search", "arguments": {"namespace": "acme", "query": "redis", "deep": '
            + nested(depth) + "}}}").encode()
    assert search_texts(body) is None
    assert valid_request_id(body) is True
