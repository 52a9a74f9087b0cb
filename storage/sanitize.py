"""Prompt-injection layers for stored text a model will read later.

v0 API (stable; the implementation will grow):
- `sanitize_text(text)`: strip control characters and escape forged untrusted-data markers.
- `screen_text(*texts)`: reasons the text looks instruction-shaped ([] means clean).
- `wrap_untrusted(text)` / `unwrap_untrusted(text)`: the markers put around returned text.
These are layers, not proofs.
"""

from __future__ import annotations

import re

OPEN = "<<<UNTRUSTED_DATA>>>"
CLOSE = "<<<END_UNTRUSTED_DATA>>>"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FORGED = re.compile(r"<<<\s*(END_)?UNTRUSTED_DATA\s*>>>", re.IGNORECASE)
_SCREENS = [
    ("ignore-instructions", re.compile(r"\b(ignore|disregard)\b.{0,40}\b(previous|prior|above)\b"
                                        r".{0,20}\b(instructions?|prompts?|rules)", re.I | re.S)),
]


def sanitize_text(text: str) -> str:
    text = _CONTROL.sub("", text)
    return _FORGED.sub("[[UNTRUSTED_DATA]]", text)


def screen_text(*texts: str | None) -> list[str]:
    joined = "\n".join(t for t in texts if t)
    return [name for name, pattern in _SCREENS if pattern.search(joined)]


def wrap_untrusted(text: str | None) -> str | None:
    if text is None:
        return None
    return f"{OPEN}{text}{CLOSE}"


def unwrap_untrusted(text: str | None) -> str | None:
    if text is None:
        return None
    if text.startswith(OPEN) and text.endswith(CLOSE):
        return text[len(OPEN) : -len(CLOSE)]
    return text
