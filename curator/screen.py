"""The secret and personal-data screen every curated operation passes before it is applied.

storage/sanitize.py screens for instruction-shaped text; nothing in memhub screened for
credentials or personal data, and a curator is the one writer that copies text out of a
session log wholesale, where keys and customer details end up. A hit drops the operation and
names the category (never the matched text). Patterns, deliberately conservative:
- secrets: Anthropic / OpenAI style `sk-` keys, GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_,
  github_pat_), AWS access key ids (AKIA/ASIA), Slack tokens (xox?-), Google API keys (AIza),
  PEM private keys, JWTs, `Bearer` tokens, and `password|secret|token|api_key = value`
  assignments with a value of 8+ characters;
- personal data: e-mail addresses, phone numbers (international +CC form, or the North American
  (555) 123-4567 / 555-123-4567 forms), card-like numbers of 13-19 digits that pass the Luhn
  check, US social security numbers, IBANs.
Layers, not proofs: a secret in a format not listed here passes; docs/curator.md says so.
"""

from __future__ import annotations

import re

_SECRETS: list[tuple[str, re.Pattern[str]]] = [
    ("secret:api-key", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
    ("secret:github-token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})")),
    ("secret:aws-key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("secret:slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("secret:google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("secret:private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("secret:jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    ("secret:bearer", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*", re.IGNORECASE)),
    ("secret:assignment", re.compile(
        r"\b(password|passwd|secret|token|api[_-]?key|access[_-]?key)\b\s*[:=]\s*"
        r"['\"]?[^\s'\"]{8,}", re.IGNORECASE)),
]
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(
    r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(?\d{1,4}\)?[\s.-]?){2,5}\d{2,4}\b"
    r"|(?<!\d)\(\d{3}\)\s?\d{3}[\s.-]\d{4}\b|(?<![\w-])\d{3}-\d{3}-\d{4}\b")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,4})?\b")


def luhn(digits: str) -> bool:
    """The checksum payment card numbers carry (ISO/IEC 7812)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card(text: str) -> bool:
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn(digits):
            return True
    return False


def sensitive(*texts: str | None) -> list[str]:
    """The categories of secret or personal data found in `texts`; [] means clean."""
    found: list[str] = []
    for text in texts:
        if not text:
            continue
        for name, pattern in _SECRETS:
            if name not in found and pattern.search(text):
                found.append(name)
        checks = (("personal:email", _EMAIL.search(text)),
                  ("personal:phone", _PHONE.search(text)),
                  ("personal:card-number", _card(text)),
                  ("personal:ssn", _SSN.search(text)),
                  ("personal:iban", _IBAN.search(text)))
        found.extend(name for name, hit in checks if hit and name not in found)
    return found
