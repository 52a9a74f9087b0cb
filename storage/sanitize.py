"""Prompt-injection layers for stored text a model will read later.

Stable API (other areas call it; signatures do not change):
- `sanitize_text(text)`: what is STORED. Control characters are stripped (newline and tab
  kept, CRLF becomes LF) and anything that looks like one of our untrusted-data markers
  (any case, spacing, zero-width or full-width variant) is replaced one-way by
  `[[UNTRUSTED_DATA]]`, so stored text can never close the wrapper it is returned in.
- `screen_text(*texts)`: reasons the text looks instruction-shaped; `[]` means clean. A
  non-empty answer means the write is QUARANTINED (stored, visible to the writer and to
  `include_quarantined=true` reads, excluded from other reads).
- `wrap_untrusted(text)` / `unwrap_untrusted(text)`: the markers put around returned text, and
  how a consumer takes them off again (`unwrap_all` does it for a whole tool answer).
- `neutralise_markers(text)`: marker look-alikes made inert, for text returned unwrapped (JSON
  keys).

These are layers, not proofs: deterministic screens are bypassable by an adaptive attacker
(paraphrase, a language we have no pattern for, an encoding we do not decode). What is caught
and what is not is measured in tests/unit/test_injection_screen.py and docs/security.md
(Untrusted data).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from .screen_rules import SCREENS

OPEN = "<<<UNTRUSTED_DATA>>>"
CLOSE = "<<<END_UNTRUSTED_DATA>>>"
NEUTRALISED = "[[UNTRUSTED_DATA]]"

# C0 controls except \t and \n, DEL, and the C1 block. \r is handled separately (CRLF -> LF).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Invisible characters a screen must look through: zero-width, joiners, word joiner and
# invisible operators, BOM, soft hyphen, Mongolian vowel separator, bidi embeddings/overrides
# and isolates, and the Unicode "tag" block (used to smuggle ASCII invisibly).
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
    "\U000e0000-\U000e007f]"
)
# A forged marker, matched on a normalised copy (NFKC, invisibles removed, casefolded).
_MARKER = re.compile(
    r"<+\s*/?\s*(?:end|begin|start|open|close)?[\s_-]*untrusted[\s_-]*data\s*>+"
)

# Look-alike letters folded to ASCII for the screen only (Cyrillic and Greek lower case).
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k",
        "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x",
        "ѕ": "s", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ı": "i",
        "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
        "υ": "u", "χ": "x",
    }
)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s"})
_BASE64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_MAX_SCREEN_CHARS = 200_000
_MAX_BASE64_TOKENS = 20

# --- write side -------------------------------------------------------------------------
def _normalised_with_map(text: str) -> tuple[str, list[int]]:
    """A casefolded NFKC copy of `text` without invisibles, and each output char's source index.

    Per-character NFKC is enough to undo full-width and compatibility forms, which is what a
    forged marker would use; the index map lets a match be cut out of the ORIGINAL text.
    """
    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if _INVISIBLE.match(ch):
            continue
        for piece in unicodedata.normalize("NFKC", ch).casefold():
            out.append(piece)
            index.append(i)
    return "".join(out), index


def _neutralise_markers(text: str) -> str:
    if "<" not in text and "\uff1c" not in text and "\ufe64" not in text:
        return text
    normalised, index = _normalised_with_map(text)
    spans = [(index[m.start()], index[m.end() - 1] + 1) for m in _MARKER.finditer(normalised)]
    if not spans:
        return text
    parts: list[str] = []
    cursor = 0
    for start, end in spans:
        parts.append(text[cursor:start])
        parts.append(NEUTRALISED)
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


def neutralise_markers(text: str) -> str:
    """`text` with every untrusted-data marker look-alike replaced by `[[UNTRUSTED_DATA]]`
    (what `sanitize_text` and `wrap_untrusted` do to markers), for text returned bare."""
    return _neutralise_markers(text)


def sanitize_text(text: str) -> str:
    """The text as it will be stored: no control characters, no forged untrusted-data markers.

    One-way: a neutralised marker is never turned back into a marker on read.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _neutralise_markers(text)


# --- screening --------------------------------------------------------------------------
def _strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


def _despace(text: str) -> str:
    # "i g n o r e   p r e v i o u s": single spaces inside words, wider gaps between them.
    return re.sub(r" {2,}", " ", re.sub(r"(?<=\S) (?=\S)", "", text))


def _variants(text: str) -> list[str]:
    base = _strip_marks(_INVISIBLE.sub("", unicodedata.normalize("NFKC", text))).casefold()
    folded = base.translate(_CONFUSABLES)
    out = [base, folded, folded.translate(_LEET), codecs.encode(base, "rot13")]
    if re.search(r"(?:\b\w ){4,}", folded):
        out.append(_despace(folded))
    return out


def _decoded_base64(text: str) -> list[str]:
    found: list[str] = []
    for match in _BASE64_TOKEN.finditer(text):
        token = match.group(0)
        if len(found) >= _MAX_BASE64_TOKENS:
            break
        padded = token + "=" * (-len(token) % 4)
        try:
            raw = base64.b64decode(padded, altchars=b"-_" if "-" in token or "_" in token
                                   else None, validate=True)
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(1 for c in decoded if c.isprintable() or c in "\n\t")
        if decoded and printable / len(decoded) > 0.95:
            found.append(decoded)
    return found


def _screen_one(text: str) -> set[str]:
    reasons: set[str] = set()
    for variant in _variants(text):
        for name, pattern in SCREENS:
            if name not in reasons and pattern.search(variant):
                reasons.add(name)
    return reasons


def screen_text(*texts: str | None) -> list[str]:
    """Why the given texts look instruction-shaped: sorted reason codes, `[]` when clean.

    Screens a normalised copy (NFKC, invisibles and accents removed, look-alike letters
    folded, leetspeak, letter spacing and rot13 undone, base64 tokens decoded); the caller
    stores the sanitized original.
    """
    joined = "\n".join(t for t in texts if t)[:_MAX_SCREEN_CHARS]
    if not joined:
        return []
    reasons = _screen_one(joined)
    for decoded in _decoded_base64(joined):
        if _screen_one(decoded):
            reasons.add("encoded-instructions")
    return sorted(reasons)


# --- read side --------------------------------------------------------------------------
def wrap_untrusted(text: str | None) -> str | None:
    """`text` between the untrusted-data markers. Any marker look-alike inside is neutralised
    again first (defence in depth for text stored before sanitizing existed), so the wrapper
    holds exactly one OPEN and one CLOSE."""
    if text is None:
        return None
    return f"{OPEN}{_neutralise_markers(text)}{CLOSE}"


def unwrap_untrusted(text: str | None) -> str | None:
    """The stored text inside one wrapper; text without the wrapper is returned unchanged."""
    if text is None:
        return None
    if text.startswith(OPEN) and text.endswith(CLOSE) and len(text) >= len(OPEN) + len(CLOSE):
        return text[len(OPEN) : -len(CLOSE)]
    return text


def unwrap_all(value: Any) -> Any:
    """`unwrap_untrusted` applied to every string inside a tool answer (dicts, lists)."""
    if isinstance(value, str):
        return unwrap_untrusted(value)
    if isinstance(value, dict):
        return {k: unwrap_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_all(v) for v in value]
    return value


@dataclass(frozen=True)
class Screening:
    """The screen's verdict on one write: quarantined when any reason was found."""

    reasons: tuple[str, ...]

    @property
    def quarantined(self) -> bool:
        return bool(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        return {"quarantined": self.quarantined, "reasons": list(self.reasons)}


def screen(*texts: str | None) -> Screening:
    return Screening(tuple(screen_text(*texts)))
