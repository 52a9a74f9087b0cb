"""JSON from outside the process (a webhook delivery, GitHub's answers, the curator model's
answer, a client's request), parsed with its nesting bounded.

Python's parser recurses once per level: a few thousand brackets raise RecursionError, which no
caller expects from a parse and which became an HTTP 500 or a generic tool error. No document
memhub reads nests anywhere near MAX_DEPTH, so deeper is refused as malformed: `TooDeep` is a
ValueError, so a caller that already treats "not JSON" as malformed treats it the same way.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


class TooDeep(ValueError):
    """The document nests deeper than allowed (or than the parser can follow)."""


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(data)`, refusing a document nested more than `max_depth` levels (an array
    or object is one level). Raises ValueError (TooDeep for the nesting)."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels") from None
    if _deeper_than(value, max_depth):
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    # An explicit stack: walking the parsed value must not recurse either.
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, level = stack.pop()
        if level > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, level + 1))
    return False
