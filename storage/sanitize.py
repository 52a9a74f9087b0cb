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

_F = re.IGNORECASE | re.MULTILINE
_W = r"[^.\n]"  # stay inside one sentence

# (reason, pattern). Patterns run on normalised, lower-cased variants of the text (see
# `_variants`), so they are written in lower case and need no Unicode tricks of their own.
_SCREENS: list[tuple[str, re.Pattern[str]]] = [
    # --- override the instructions the model already has ----------------------------------
    ("ignore-instructions", re.compile(
        rf"\b(ignore|disregard|forget|override|bypass|skip)\b{_W}{{0,40}}?"
        rf"\b(previous|prior|above|earlier|preceding|foregoing|original)\b{_W}{{0,30}}?"
        r"\b(instructions?|prompts?|rules|guidance|guidelines|directions|directives|"
        r"messages|policy|policies|context|commands)\b", _F)),
    ("ignore-instructions", re.compile(
        r"\b(ignore|disregard|forget)\s+(all\s+of\s+|everything\s+|all\s+)?(the\s+)?above\b", _F)),
    ("ignore-instructions", re.compile(
        rf"\bforget\s+(everything|all)\b{_W}{{0,40}}\b(told|said|instructed|learned|given)\b",
        _F)),
    ("ignore-instructions", re.compile(r"\bignore\s+the\s+(user|system|developer)\b", _F)),
    ("ignore-instructions-multilingual", re.compile(
        r"\b(ignora\w*|olvida\w*|omite)\s+(todas?\s+)?(las\s+|los\s+)?"
        r"(instrucciones|indicaciones|reglas|ordenes)\s+(anteriores|previas)"
        r"|\b(ignore[rz]?|oublie[rz]?)\s+(toutes\s+|tous\s+)?(les\s+)?"
        r"(instructions|consignes|regles|directives)\s+(precedentes|anterieures)"
        r"|\b(ignorier\w*|vergiss\w*|missachte\w*)\s+(alle\s+)?(vorherigen|bisherigen|"
        r"vorigen|obigen|fruheren)\s+(anweisungen|instruktionen|befehle|regeln|vorgaben)"
        r"|\b(ignora\w*|esquece\w*)\s+(todas\s+)?(as\s+|le\s+)?(instrucoes|istruzioni)\s+"
        r"(anteriores|precedenti)"
        r"|\b(negeer|vergeet)\s+(alle\s+)?(vorige|eerdere)\s+(instructies|opdrachten)"
        r"|\b(игнорир\w*|забуд\w*)\s+(все\s+)?(предыдущ\w*|прежн\w*)\s+(инструкц\w*|указан\w*)"
        r"|(忽略|无视|忽視|無視)\s*(之前|以前|先前|上面|上述|前面)?\s*(的)?\s*(所有|全部)?\s*(的)?\s*"
        r"(指令|指示|说明|說明|提示|规则|規則)"
        r"|(以前|前|上記)\s*の\s*(指示|命令)\s*を\s*(無視|忘れ)"
        r"|(이전|앞의)\s*(모든\s*)?(지시|명령)\w*\s*(을|를)?\s*무시", _F)),
    ("override-claim", re.compile(
        r"\b(system|admin|security|policy|developer)\s+override\b"
        rf"|\boverrides?\s+(all\s+)?(earlier|previous|prior|existing)\s+{_W}{{0,10}}"
        r"\b(policy|policies|instructions|rules)\b"
        r"|\bnew\s+(trusted\s+|system\s+)?instructions?\s*(from|by)\s+(the\s+)?"
        r"(developer|system|admin|administrator|operator|owner|platform|security)"
        r"|\bnew\s+trusted\s+instructions?\b"
        rf"|\bfrom\s+now\s+on\b{_W}{{0,6}}[,:]?\s*(you|answer|always|never|respond|reply|"
        r"ignore|do\s+not|don't|treat|print)\b", _F)),
    # --- role play and jailbreak personas ------------------------------------------------
    ("role-play", re.compile(
        # "you are now able to deploy" is a changelog, "you are now DAN" is not.
        r"\byou\s+are\s+(now\s+(a|an|the|in|my|dan|free|unrestricted|unfiltered|jailbroken)\b"
        r"|no\s+longer\s+(bound|restricted|an?\s+ai|required\s+to))"
        r"|\b(pretend|imagine)\s+(that\s+)?(you\s+are|you're|to\s+be)\b"
        r"|\bact\s+as\s+(if\s+you\s+(are|were)|an?\s+(unrestricted|unfiltered|jailbroken))"
        r"|\b(dan|do\s+anything\s+now)\b.{0,40}\b(no\s+restrictions|never\s+refuses?)"
        r"|\bwith\s+no\s+(restrictions|rules|filters|limits)\b"
        r"|\b(jailbreak|jailbroken|developer\s+mode\s+(enabled|on))\b", _F)),
    # --- chat-template and turn forgery ---------------------------------------------------
    ("chat-template-forgery", re.compile(
        r"<\|\s*(im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
        r"end_header_id|begin_of_text)\s*\|>"
        r"|\[/?inst\]|<</?sys>>|<\s*/?\s*(start_of_turn|end_of_turn)\s*>"
        r"|^\s*#{1,6}\s*(system|assistant|developer|instructions?)\s*:?\s*$"
        r"|^\s*#{1,6}\s*(system|assistant|developer)\s*:", _F)),
    ("turn-forgery", re.compile(
        r"(^|<!--)\s*(assistant|developer|human)\s*:\s*\S"
        r"|(^|<!--)\s*system\s*:\s*(you|ignore|always|never|from\s+now|the\s+following|new|"
        r"call|do|follow|disregard|forget|override|treat|print|reveal|export)\b", _F)),
    ("delimiter-forgery", re.compile(
        # An opening <system> is a common XML element; a closing one or an instructions tag
        # is how a forged prompt section ends or begins.
        r"<\s*/\s*(system|assistant|developer)\s*>"
        r"|<\s*/?\s*(instructions?|untrusted[\w-]*|trusted[\w-]*)\s*>"
        r"|<+\s*/?\s*(end|begin|start|open|close)?[\s_-]*untrusted[\s_-]*data\s*>+"
        r"|\[\[untrusted_data\]\]", _F)),
    # --- tool-call look-alikes --------------------------------------------------------------
    ("tool-call-lookalike", re.compile(
        r"<\s*/?\s*(tool_call|tool_use|tool_result|function_calls?|function_results|invoke|"
        r"antml:[a-z_]+)\b"
        # A bare {"name", "arguments"} pair is how developers document function calling; it
        # counts only when it names one of memhub's own tools (the next pattern).
        r"|\"(tool|function|tool_name|recipient_name)\"\s*:\s*\"[^\"]{1,80}\"[^{}]{0,200}"
        r"\"(arguments|args|parameters|input|params)\"\s*:\s*[{\[]"
        r"|\"(arguments|args|parameters|input|params)\"\s*:\s*[{\[][^{}]{0,300}\}[^{}]{0,200}"
        r"\"(tool|function|tool_name)\"\s*:\s*\"", _F)),
    ("tool-call-lookalike", re.compile(
        r"\b(call|invoke|execute|run|use)\s+(the\s+)?`?(memory|handoff|session|artifact)_[a-z_]+`?"
        r"\s+(tool\s+)?(on|for|with|to)\b"
        r"|\"name\"\s*:\s*\"(memory|handoff|session|artifact)_[a-z_]+\"", _F)),
    # --- exfiltration ----------------------------------------------------------------------
    ("exfiltration", re.compile(
        r"\b(send|post|upload|forward|transmit|submit|exfiltrate|leak|report|pipe|curl)\b"
        r"[^\n]{0,100}?\b(contents?|memor(y|ies)|keys?|secrets?|tokens?|credentials|passwords?|"
        r"context|conversation|history|everything|variables)\b[^\n]{0,80}?"
        r"\b(to|into)\s+<?https?://"
        # An image URL whose query is left open for the reader to fill (a badge's fixed
        # query string is not an exfiltration channel).
        r"|!\[[^\]\n]*\]\(\s*<?https?://[^)\s]*[?&][\w-]*=(\)|\{\{|\$|<)"
        r"|!\[[^\]\n]*\]\(\s*<?https?://[^)\s]*[?&][\w-]*=[^)\s]*"
        r"(secret|token|key|password|credential|context|memor)"
        r"|https?://[^\s)]*[?&][\w-]*=(?=[\s)\]>\"']|$|\{\{)"
        r"|https?://[^\s)]*\{\{[^}]*\}\}"
        r"|\bappend\b[^\n]{0,80}\bto\s+the\s+(url|link|query)", _F)),
    ("secret-request", re.compile(
        r"\b(reveal\w*|print|output|list|dump|send|paste|export|share|show|include|leak|"
        r"disclose|give\s+me|tell\s+me|gib|envoie|revela|muestra)\b[^.;\n]{0,40}?"
        # "only admins can export API keys" is a project fact; "print all your API keys" or
        # "show the system prompt" asks the reader to hand something over.
        r"(\b(your|all|every|any)\s+(of\s+)?(the\s+|your\s+)?(stored\s+|saved\s+)?"
        r"(api\s+keys?|environment\s+variables?|env\s+vars?|credentials|secrets|passwords|"
        r"private\s+keys?|access\s+tokens?|cles?\s+api)"
        r"|\b(systemprompt|system\s*prompt|context\s+window|hidden\s+instructions|"
        r"initial\s+prompt))\b", _F)),
    ("secret-request", re.compile(
        r"\b(contents?|text)\s+of\s+your\s+(context|memory|instructions|prompt|system)", _F)),
    ("fetch-and-echo", re.compile(
        rf"\b(fetch|open|visit|download|curl|retrieve|read)\b{_W}{{0,60}}\b(paste|include|"
        rf"insert|put|echo|copy)\b{_W}{{0,40}}\b(your|the)\s+(reply|answer|response|output)",
        _F)),
    # --- directives addressed to whatever model reads the text later -----------------------
    ("reader-directive", re.compile(
        r"\b(note|message|instructions?|attention|reminder|memo)\s+(to|for)\s+(any|all|every|the)"
        r"\s+(ai|llm|agent|assistant|model|bot)s?\b"
        r"|\b(ai|llm)\s+(agents?|assistants?|models?)\s+(reading|processing|that\s+reads?|"
        r"who\s+reads?)\b"
        r"|\b(whoever|anyone\s+who|any\s+(ai|agent|model|assistant|llm)\s+(that|who))\s+"
        r"(reads?|handles|answers|processes|sees)\s+(this|the\s+next)\b"
        rf"|\bwhen(ever)?\s+(you\s+are\s+|you're\s+)?asked\s+(about|for|whether)\b{_W}{{0,60}}"
        r"\b(always|never)\s+(say|state|tell|answer|reply|respond|claim)\b"
        r"|\b(do\s+not|don't|never)\s+(mention|reveal|disclose)\s+(this|these|step\s+\d+|that\s+"
        r"you|it\s+to\s+the\s+user)\b", _F)),
    ("screening-bypass", re.compile(
        rf"\b(skip|bypass|disable|turn\s+off|circumvent|ignore)\b{_W}{{0,25}}"
        r"\b(safety|content|injection|prompt|security)\s+(screening|screen|filters?|checks?|"
        r"scan\w*|guard\w*)"
        r"|\bquarantine\s+is\s+(disabled|off|suspended)"
        r"|\b(pre-?approved|approved|authori[sz]ed)\s+by\s+(security|the\s+security\s+team|"
        r"the\s+platform\s+team|platform\s+team|an?\s+admin|the\s+admin|the\s+developer)", _F)),
    ("decode-and-obey", re.compile(
        rf"\bdecode\b{_W}{{0,40}}\b(and|then)\s+(do|follow|execute|act|run|obey|apply)\b", _F)),
]


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
    found = []
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
        for name, pattern in _SCREENS:
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
