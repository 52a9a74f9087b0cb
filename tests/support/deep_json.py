"""JSON nested past memhub's bound (memhub/bounded_json.py), hidden in a field no reader uses,
so that only the bound can refuse it: a reader without the bound would accept the document."""

from __future__ import annotations

import json
from typing import Any

# Past MAX_DEPTH (64) yet within what Python's parser follows; and far past that parser.
PAST_THE_BOUND = 100
PAST_THE_PARSER = 100_000


def with_deep_field(value: dict[str, Any], depth: int) -> bytes:
    """`value` as JSON with one more top-level field, arrays nested `depth` deep."""
    text = json.dumps(value)
    return (text[:-1] + ', "nested": ' + "[" * depth + "]" * depth + "}").encode()
