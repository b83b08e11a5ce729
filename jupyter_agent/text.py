"""Valid Unicode text: lone surrogates found and repaired.

JSON allows ``"\\ud800"`` (a lone surrogate); Python's ``json.loads`` accepts it and gives a
``str`` that cannot be encoded as UTF-8, so the first write to a file, a database or a
socket fails. The project's rule (see ``docs/api.md``):

- text a *person* sends (a request body) holding a lone surrogate is refused with 400
  ``bad_unicode`` (:func:`find_lone_surrogate` names where);
- text that *comes to us* (a provider reply, a cell's or a command's output) is repaired:
  each lone surrogate becomes U+FFFD (:func:`repair`, :func:`repair_json`), a valid pair
  written as two escapes is joined into its character.

Everything here is pure and cheap on valid text (one regex search).
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

__all__ = ["REPLACEMENT", "find_lone_surrogate", "has_lone_surrogate", "repair", "repair_json"]

REPLACEMENT: Final = "\ufffd"

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_PAIR_OR_LONE: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")

T = TypeVar("T")


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point (alone or as an escaped pair)."""
    return _SURROGATE.search(text) is not None


def _fix(match: re.Match[str]) -> str:
    found = match.group(0)
    if len(found) == 2:  # a high + low pair: the character it encodes
        high, low = ord(found[0]) - 0xD800, ord(found[1]) - 0xDC00
        return chr(0x10000 + (high << 10) + low)
    return REPLACEMENT


def repair(text: str) -> str:
    """``text`` as valid Unicode: pairs joined, each lone surrogate replaced by U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return _PAIR_OR_LONE.sub(_fix, text)


def repair_json(value: T) -> T:
    """A JSON value (as ``json.loads`` gives it) with every string, keys included, repaired.

    Returns ``value`` itself when nothing needed repair (no copy on the common path).
    """
    fixed, _changed = _repair_any(value)
    return fixed  # type: ignore[no-any-return]


def _repair_any(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        out = repair(value)
        return out, out is not value
    if isinstance(value, list):
        items = [_repair_any(v) for v in value]
        if any(changed for _, changed in items):
            return [v for v, _ in items], True
        return value, False
    if isinstance(value, dict):
        pairs = [(_repair_any(k), _repair_any(v)) for k, v in value.items()]
        if any(kc or vc for (_, kc), (_, vc) in pairs):
            return {k: v for (k, _), (v, _) in pairs}, True
        return value, False
    return value, False


def find_lone_surrogate(value: Any, path: str = "") -> str | None:
    """The path (``text``, ``view.path``, ``attachments[0]``) of the first string in a JSON
    value holding a surrogate, or None when all of it is valid Unicode."""
    if isinstance(value, str):
        return path or "(body)" if has_lone_surrogate(value) else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = find_lone_surrogate(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and has_lone_surrogate(key):
                return where
            found = find_lone_surrogate(item, where)
            if found is not None:
                return found
    return None
