"""Is this text a credential? The check that keeps secrets out of memory (issue 15; pure).

:func:`credential_reason` answers why a text must not be stored, or None. It refuses:

- a *known* secret value (the values the server's scrubber knows: resolved provider keys,
  the server token, filtered environment values; see :mod:`jupyter_agent.runtime.secrets`),
  and the scrubber's ``[redacted: NAME]`` marker (text from a kernel already had the known
  value replaced: what stays is the sign that a secret was there);
- credential-shaped text: provider key prefixes (``sk-``, ``sk-ant-``, ``ghp_``/``gho_``/
  ``github_pat_``, ``xoxb-``/``xoxa-``/``xoxp-``, ``AKIA``/``ASIA`` + 16, ``AIza`` + 35),
  PEM private key headers, JWTs, ``Bearer <token>``, ``password = value`` style assignments
  (``password``, ``passwd``, ``secret``, ``token``, ``api_key``, ...; ``=`` or ``:``),
  URLs with a ``user:password@`` part, and long high-entropy tokens (at least 32
  characters mixing lower case, upper case and digits).

The reason is a short phrase for a person ("looks like an API key"): it never holds any
part of the text, so it can go into an error, a log line or a REST answer as it is.
Deterministic, linear-time patterns (no backtracking blow-up on a 2,000-char text).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Final

__all__ = ["MIN_KNOWN_CHARS", "MIN_TOKEN_CHARS", "credential_reason"]

#: Known values shorter than this are not looked for (as the scrubber's minimum).
MIN_KNOWN_CHARS: Final = 8
#: The shortest run of token characters the entropy rule looks at.
MIN_TOKEN_CHARS: Final = 32
_MIN_ENTROPY_BITS: Final = 3.5  # per character; English words and hex ids sit below

_REDACTED: Final = re.compile(r"\[redacted: [^\]\n]{1,200}\]")

# (pattern, reason): the first that matches names the refusal. Word-ish boundaries keep
# "task-list" from reading as an ``sk-`` key.
_SHAPES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        "holds a private key",
    ),
    (re.compile(r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_\-]{16,}"), "looks like an Anthropic API key"),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{16,}"), "looks like an API key"),
    (re.compile(r"(?<![A-Za-z0-9])gh[opsu]_[A-Za-z0-9]{20,}"), "looks like a GitHub token"),
    (re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}"), "looks like a GitHub token"),
    (re.compile(r"(?<![A-Za-z0-9])xox[abpsr]-[A-Za-z0-9\-]{10,}"), "looks like a Slack token"),
    (
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        "looks like an AWS access key",
    ),
    (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{35}"), "looks like a Google API key"),
    (
        re.compile(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
        ),
        "looks like a JSON web token",
    ),
    (
        re.compile(r"\b[Bb]earer\s+[A-Za-z0-9._~+/=\-]{16,}"),
        "holds a bearer token",
    ),
    (
        re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]+@"),
        "holds a URL with a password",
    ),
)

# ``db_password = hunter2``, ``"api-key": "..."``, ``token: abc123``: a credential word
# (maybe inside a longer name), then ``=`` or ``:``, then a value.
_ASSIGNMENT: Final = re.compile(
    r"(?i)(?<![A-Za-z])[A-Za-z_\-]{0,30}?"
    r"(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key)"
    r"[A-Za-z_\-]{0,30}[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{4,})"
)
_TOKEN: Final = re.compile(rf"[A-Za-z0-9+_=\-]{{{MIN_TOKEN_CHARS},}}")


def _looks_like_value(value: str) -> bool:
    """An assignment's value that reads like a secret rather than a word ("token: usage")."""
    return len(value) >= 8 or any(not ch.isalpha() for ch in value)


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    """A long token mixing lower case, upper case and digits, random enough to be a key."""
    lower = sum(ch.islower() for ch in token)
    upper = sum(ch.isupper() for ch in token)
    digits = sum(ch.isdigit() for ch in token)
    if min(lower, upper, digits) < 2:
        return False
    return _entropy(token) >= _MIN_ENTROPY_BITS


def credential_reason(text: str, known: Iterable[str] = ()) -> str | None:
    """Why ``text`` must not be stored (a short phrase that never quotes it), or None.

    ``known`` are secret values to look for literally (values shorter than
    :data:`MIN_KNOWN_CHARS` are skipped). See the module docstring for the shapes.
    """
    for value in known:
        if len(value) >= MIN_KNOWN_CHARS and value in text:
            return "holds a secret this server knows (a configured key or token)"
    if _REDACTED.search(text):
        return "holds a secret this server knows (shown redacted)"
    for pattern, reason in _SHAPES:
        if pattern.search(text):
            return reason
    for match in _ASSIGNMENT.finditer(text):
        if _looks_like_value(match.group(1)):
            return "looks like a password or key assignment"
    for match in _TOKEN.finditer(text):
        if _high_entropy(match.group(0)):
            return "holds a long random token (it looks like a key)"
    return None
