"""Is this text a credential? The check that keeps secrets out of memory (pure).

:func:`credential_reason` answers why a text must not be stored, or None. It refuses:

- a *known* secret value (the values the server's scrubber knows: resolved provider keys,
  the server token, filtered environment values; see :mod:`jupyter_agent.runtime.secrets`),
  and the scrubber's ``[redacted: NAME]`` marker (text from a kernel already had the known
  value replaced: what stays is the sign that a secret was there);
- credential-shaped text: provider key prefixes (``sk-``, ``sk-ant-``, ``ghp_``/``gho_``/
  ``github_pat_``, ``hf_``, ``glpat-``, ``xoxb-``/``xoxa-``/``xoxp-``, ``AKIA``/``ASIA`` +
  16, ``AIza`` + 35), PEM private key headers, JWTs, ``Bearer <token>``, URLs with a
  ``user:password@`` part, and long high-entropy tokens (at least 32 characters mixing
  lower case, upper case and digits in short runs: camel-case words are no key);
- assignments: a name whose word is a credential word, *whole* (``password``, ``passwd``,
  ``pwd``, ``secret``, ``token``, ``api key``/``api_key``/``apiKey``, ``access key``,
  ``private key``, ``secret key``: ``DB_PASSWORD`` and ``my password`` are, ``max_tokens``
  and ``tokenizer`` are not), then ``=``, ``:`` or ``is``, then a value that reads like a
  secret. A value is no secret when it is a word ("token: usage"; after ``is`` any word:
  "the password is required"), an environment variable's name (``GITHUB_TOKEN``) or
  lookup (``os.environ[...]``, ``os.getenv(...)``, ``$VAR``), a reference (a dotted name,
  a call or a subscript: ``self.password``, ``getpass()``), or, for a name that is not a
  password word, a plain number (``4096``, ``8k``; 8 digits or more in a row read as a
  secret). A name part that ends in a credential word counts (``PGPASSWORD``); a leading
  ``--`` (a command-line flag) and the separators ``:=`` and ``=>`` are read too;
- a key word (``key``, ``token``, ``secret``, ``password``, ...) followed by a run of 32 or
  more lower-case hex digits ("the key is 3f8a..."); a hex run on its own (a commit, a
  digest) passes.

The reason is a short phrase for a person ("looks like an API key"): it never holds any
part of the text, so it can go into an error, a log line or a REST answer as it is.
Deterministic and linear-time: every pattern starts at a word start or a fixed prefix and
its repeats are bounded, so no check rescans the text from each position.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from itertools import pairwise
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
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"), "looks like a Hugging Face token"),
    (re.compile(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_\-]{20,}"), "looks like a GitLab token"),
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
        # The scheme starts a word and every part is bounded: no rescan from each letter.
        re.compile(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^/@\s:]{0,256}:[^/@\s]{1,256}@"
        ),
        "holds a URL with a password",
    ),
)

# ``db_password = hunter2``, ``"api-key": "..."``, ``my password is hunter2``: a name (one
# identifier, or two words: "db password"), then ``=``, ``:`` or ``is``, then a value.
# Which names are credentials and which values are secrets is decided in Python
# (:func:`_credential_name`, :func:`_secret_value`): the pattern only finds candidates, and
# each piece is bounded, so a long text costs one pass.
_ASSIGNMENT: Final = re.compile(
    r"(?<![A-Za-z0-9_])-{0,2}([A-Za-z][A-Za-z0-9_\-]{0,60}(?: [A-Za-z][A-Za-z0-9_\-]{0,60})?)"
    r"[\"']?(?:[ \t]{0,8}(:=|=>|[:=])[ \t]{0,8}|[ \t]{1,8}(?i:is|was)(?::[ \t]{0,8}|[ \t]{1,8}))"
    r"[\"']?([^\s\"',;]{1,200})"
)
# The parts of a name: ``DB_PASSWORD`` -> db, password; ``apiKey`` -> api, key.
_NAME_PART: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_WORDS: Final = frozenset({"password", "passwd", "pwd", "secret", "token", "apikey"})
# A name part ending in one of these is a credential word too: ``PGPASSWORD``,
# ``mypassword`` (``tokens``, ``tokenizer`` do not end in one).
_ENDINGS: Final = ("password", "passwd", "secret", "apikey", "token")
# Words whose value is a password: a plain number is one (``password: 123456``).
_PASSWORD_WORDS: Final = ("password", "passwd", "pwd", "secret")
_PAIRS: Final = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key")}
)
# Values that name where a secret is, not the secret: ``GITHUB_TOKEN``, ``PATH``,
# ``os.environ[...]``, ``os.getenv(...)``, ``$VAR`` / ``${VAR}``, ``process.env.X``; and
# plain numbers (``4096``, ``8k``, ``1.5``: at most 7 digits in a row).
_ENV_NAME: Final = re.compile(
    r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z][A-Z0-9]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PWD)"
)
# A reference to where a secret is held, not the secret: a dotted name
# (``self.password``, ``settings.OPENAI_API_KEY``), a call (``getpass()``) or a subscript
# (``request.headers['X-Token']``; the value stops at the quote).
_REFERENCE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:[(\[].*)?")
_ENV_LOOKUP: Final = re.compile(
    r"(?:os\.)?(?:environ\b|getenv\b)|process\.env\b|ENV\[|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$"
)
_NUMBER: Final = re.compile(r"[+\-]?[0-9]{1,7}(?:[.,_][0-9]{1,7}){0,4}[kKmMgGbB%]?")
_TRAILING: Final = ".!?)]}>:"
# ``the key is 3f8a...``: a credential word, then within a few characters a run of 32 or
# more lower-case hex digits (a bare hex run is a commit or a digest, and passes).
_KEY_WORD: Final = re.compile(
    r"(?i)(?<![A-Za-z])(?:api[ _\-]?key|key|token|secret|password|passwd|pwd)(?![A-Za-z])"
)
_HEX_AFTER: Final = re.compile(
    r"[ \t]{0,4}(?:(?i:is|was|=|:|=>)[ \t]{0,4})?[\"'`]?([0-9a-f]{32,})(?![0-9A-Za-z])"
)
_TOKEN: Final = re.compile(rf"[A-Za-z0-9+_=\-]{{{MIN_TOKEN_CHARS},}}")
#: Average length of a run of one character class (lower, upper, digit, other) a random
#: token stays under; ``ProductCategoryIdentifier2024Version3`` is words (runs of 4+).
_MAX_RANDOM_RUN: Final = 2.5


def _part_kind(part: str) -> str | None:
    """``"password"`` for a password word, ``"key"`` for another credential word, or None."""
    if part in _WORDS or part.endswith(_ENDINGS):
        return "password" if part.endswith(_PASSWORD_WORDS) else "key"
    return None


def _credential_name(name: str) -> str | None:
    """The kind of a name whose (last) word is a credential word, whole or as its end
    (``"password"`` or ``"key"``): ``DB_PASSWORD``, ``PGPASSWORD``, ``apiKey``,
    ``my password``, ``api key``; not ``max_tokens``, ``tokenizer`` or ``token budget``."""
    words = name.split(" ")
    last = [p.lower() for p in _NAME_PART.findall(words[-1])]
    if len(words) == 2:
        first = [p.lower() for p in _NAME_PART.findall(words[0])]
        if first and last and (first[-1], last[0]) in _PAIRS:
            return "key"
    kinds = [kind for p in last if (kind := _part_kind(p)) is not None]
    if kinds:
        return "password" if "password" in kinds else "key"
    return "key" if any(pair in _PAIRS for pair in pairwise(last)) else None


def _secret_value(value: str, *, loose: bool, password: bool = False) -> bool:
    """An assignment's value that reads like a secret: not a word ("token: usage"), an
    environment variable's name or lookup, a reference (``self.password``, ``getpass()``)
    or, unless ``password`` (the name is a password word), a plain number. ``loose``
    (after ``is``): "the password is required" is prose, so the value needs a character
    not a letter."""
    if loose:
        value = value.rstrip(_TRAILING)
    if not value or _ENV_NAME.fullmatch(value) or _ENV_LOOKUP.match(value):
        return False
    if ("." in value or "(" in value or "[" in value) and _REFERENCE.fullmatch(value):
        return False
    if not password and _NUMBER.fullmatch(value):
        return False
    if value.isalpha():
        return not loose and len(value) >= 8
    return len(value) >= 4


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _class(ch: str) -> int:
    return 0 if ch.islower() else 1 if ch.isupper() else 2 if ch.isdigit() else 3


def _high_entropy(token: str) -> bool:
    """A long token mixing lower case, upper case and digits, random enough to be a key
    (short runs of each class: words in camel case make long ones)."""
    lower = sum(ch.islower() for ch in token)
    upper = sum(ch.isupper() for ch in token)
    digits = sum(ch.isdigit() for ch in token)
    if min(lower, upper, digits) < 2:
        return False
    runs = 1 + sum(_class(a) != _class(b) for a, b in pairwise(token))
    if len(token) / runs > _MAX_RANDOM_RUN:
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
    pos = 0
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        name, sep, value = match.groups()
        kind = _credential_name(name)
        if kind is not None and _secret_value(
            value, loose=sep is None, password=kind == "password"
        ):
            return "looks like a password or key assignment"
        # Go on from the value, not past it: ``note: password=...`` is two candidates.
        pos = match.start(3)
    for match in _KEY_WORD.finditer(text):
        if _HEX_AFTER.match(text, match.end()):
            return "holds a key (a long hex value after a key word)"
    for match in _TOKEN.finditer(text):
        if _high_entropy(match.group(0)):
            return "holds a long random token (it looks like a key)"
    return None
