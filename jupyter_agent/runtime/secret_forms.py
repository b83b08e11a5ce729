"""The simple encodings of a secret value a scrubber also looks for (pure).

A model's code can print a key transformed (``base64.b64encode(key)``, ``key.hex()``,
``key[::-1]``, ``urllib.parse.quote(key)``); the text it prints reaches a model, which can
decode it back. :func:`encoded_forms` gives, for one value, every *needle*: a string whose
presence in a text shows the value in one of these forms, mapped to the encoding's label
(``""`` for the literal value):

- ``url-encoded``: ``quote(value, safe="")``, ``quote(value)`` and ``quote_plus(value)``;
- ``reversed``: ``value[::-1]``;
- ``hex``: the UTF-8 bytes in lower and upper case hex;
- ``base64`` and ``base64url``: base64 of the value embedded in longer text depends on
  the value's byte offset modulo 3 (the characters at its edges mix its bits with its
  neighbours'). For each of the 3 alignments the needle is the stable inner part: the
  characters made only of the value's own bits. So the needles match the value encoded
  alone (with or without ``=`` padding) and inside any longer encoded text; the URL-safe
  alphabet (``-_`` for ``+/``) gives three more where they differ.

A form equal to an earlier one is given once (under the first label, the literal first):
an API key like ``sk-ant-abc_123`` is its own URL encoding. Each needle of an 8-byte value
is at least 10 characters long, so a value kept by the scrubber's minimum length never
yields a needle short enough to match ordinary text by chance.
"""

from __future__ import annotations

import base64
from typing import Final
from urllib.parse import quote, quote_plus

__all__ = ["ENCODINGS", "encoded_forms"]

#: The labels of the encodings, in the order :func:`encoded_forms` tries them.
ENCODINGS: Final = ("url-encoded", "reversed", "hex", "base64", "base64url")

_URL_SAFE: Final = str.maketrans("+/", "-_")


def encoded_forms(value: str) -> dict[str, str]:
    """Every needle of ``value`` (see the module docstring) mapped to its label: the
    literal value first (label ``""``), then each encoding's needles, each string once."""
    forms: dict[str, str] = {value: ""}
    for quoted in (quote(value, safe=""), quote(value), quote_plus(value)):
        forms.setdefault(quoted, "url-encoded")
    forms.setdefault(value[::-1], "reversed")
    raw = value.encode("utf-8", "surrogatepass")
    forms.setdefault(raw.hex(), "hex")
    forms.setdefault(raw.hex().upper(), "hex")
    inner = [_stable_base64(raw, offset) for offset in range(3)]
    for needle in inner:
        if needle:
            forms.setdefault(needle, "base64")
    for needle in inner:
        if needle:
            forms.setdefault(needle.translate(_URL_SAFE), "base64url")
    return forms


def _stable_base64(raw: bytes, offset: int) -> str:
    """The base64 characters of ``raw`` placed ``offset`` bytes after a 3-byte boundary
    that depend on ``raw`` alone: character ``i`` holds bits ``6i`` to ``6i + 6`` of the
    stream, so the first kept is the first to start at or after bit ``8 * offset``, and the
    last the last to end by bit ``8 * (offset + len(raw))``."""
    encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
    start = -(-8 * offset // 6)  # ceil
    end = 8 * (offset + len(raw)) // 6
    return encoded[start:end]
