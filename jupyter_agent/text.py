"""Valid Unicode text: lone surrogates found and repaired.

JSON allows ``"\\ud800"`` (a lone surrogate); Python's ``json.loads`` accepts it and gives a
``str`` that cannot be encoded as UTF-8, so the first write to a file, a database or a
socket fails. The project's rule (see ``docs/api.md``):

- text a *person* sends (a request body) holding a lone surrogate is refused with 400
  ``bad_unicode`` (:func:`lone_surrogate` names where, and which);
- text that *comes to us* (a provider reply, a cell's or a command's output) is repaired:
  each lone surrogate becomes U+FFFD (:func:`repair`, :func:`repair_json`), a valid pair
  written as two escapes is joined into its character;
- a stream of text pieces (a model's text deltas) is repaired piece by piece with
  :class:`StreamRepair`, which holds back a high surrogate ending one piece so that a
  character split between two pieces is joined, not replaced.

Everything here is pure and cheap on valid text (one regex search per string); walking a
JSON value is iterative, so a deeply nested value never raises ``RecursionError`` here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = [
    "REPLACEMENT",
    "StreamRepair",
    "first_leaf",
    "has_lone_surrogate",
    "lone_surrogate",
    "repair",
    "repair_json",
]

REPLACEMENT: Final = "\ufffd"

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_PAIR_OR_LONE: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")

T = TypeVar("T")

# A path into a JSON value as a linked chain (parent chain, key or index): built only as
# far as the walk goes, formatted only when a surrogate is found.
_Chain = tuple[Any, "str | int"] | None


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
    """``text`` as valid Unicode: pairs joined, each lone surrogate replaced by U+FFFD.

    Returns ``text`` itself when it is valid.
    """
    if _SURROGATE.search(text) is None:
        return text
    return _PAIR_OR_LONE.sub(_fix, text)


def repair_json(value: T) -> T:
    """A JSON value (as ``json.loads`` gives it) with every string, keys included, repaired.

    Returns ``value`` itself when nothing needed repair (no copy on the common path);
    otherwise a copy in which lists and tuples are lists and mappings are dicts.
    """
    if _first_surrogate(value) is None:
        return value
    return _repair_any(value)  # type: ignore[no-any-return]


def _repair_any(root: Any) -> Any:
    # Only reached for a value known to hold a surrogate, so it copies the whole value;
    # iterative (each source written into its slot of the copy) like the walk below.
    top: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, top, 0)]
    while stack:
        source, target, slot = stack.pop()
        if isinstance(source, str):
            target[slot] = repair(source)
        elif isinstance(source, (list, tuple)):
            items: list[Any] = [None] * len(source)
            target[slot] = items
            stack.extend((child, items, i) for i, child in enumerate(source))
        elif isinstance(source, dict):
            mapping: dict[Any, Any] = {}
            target[slot] = mapping
            for key, child in source.items():
                fixed = repair(key) if isinstance(key, str) else key
                mapping[fixed] = None  # the key's place, in the source's order
                stack.append((child, mapping, fixed))
        else:
            target[slot] = source
    return top[0]


def _first_surrogate(value: Any) -> tuple[_Chain, str] | None:
    """The chain to the first string (in document order, a key before its value) holding
    a surrogate (None: ``value`` itself), and that string; None when there is none."""
    return _first_leaf(value, _surrogate_string)


def _surrogate_string(item: Any) -> bool:
    return isinstance(item, str) and _SURROGATE.search(item) is not None


def _first_leaf(value: Any, bad: Callable[[Any], bool]) -> tuple[_Chain, Any] | None:
    """The chain to the first leaf (a string, number, bool or null, or a key; in document
    order, a key before its value) for which ``bad`` is true, and that leaf."""
    stack: list[tuple[Any, _Chain]] = [(value, None)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend((item[i], (where, i)) for i in range(len(item) - 1, -1, -1))
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                chain = (where, str(key))
                stack.append((child, chain))
                if bad(key):
                    stack.append((key, chain))  # popped before the value: reported first
        elif bad(item):
            return where, item
    return None


def first_leaf(value: Any, bad: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """``(path, leaf)`` of the first leaf of a JSON value (a string, number, bool or null;
    keys too, a key before its value) for which ``bad`` is true, or None.

    ``path`` names it as :func:`lone_surrogate` does (``view.path``, ``attachments[0]``,
    ``(body)``); iterative, so any depth is fine.
    """
    found = _first_leaf(value, bad)
    if found is None:
        return None
    chain, leaf = found
    return _path(chain), leaf


_UNSHOWN: Final = re.compile("[\ud800-\udfff\x00]")


def _escape(text: str) -> str:
    # A path holding the surrogate (or a NUL) itself could be neither logged nor stored.
    return _UNSHOWN.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _path(chain: _Chain) -> str:
    steps: list[str | int] = []
    while chain is not None:
        chain, step = chain
        steps.append(step)
    path = ""
    for step in reversed(steps):
        if isinstance(step, int):
            path += f"[{step}]"
        else:
            path = f"{path}.{_escape(step)}" if path else _escape(step)
    return path or "(body)"


def lone_surrogate(value: Any) -> tuple[str, str] | None:
    """``(path, escape)`` of the first string in a JSON value holding a surrogate, or None
    when all of it is valid Unicode.

    ``path`` names the string: ``text``, ``view.path``, ``attachments[0]``, ``(body)`` for
    a bare string; a key holding one is named by its own path. ``escape`` is the first
    surrogate as JSON writes it (``\\ud800``). Surrogates in a key are written as escapes
    in ``path`` too, so both can go into a message and a log line.
    """
    found = _first_surrogate(value)
    if found is None:
        return None
    chain, text = found
    match = _SURROGATE.search(text)
    assert match is not None
    return _path(chain), f"\\u{ord(match.group(0)):04x}"


class StreamRepair:
    """Repairs a text stream piece by piece: :meth:`feed` each piece, :meth:`flush` at the end.

    The concatenation of what it returns is ``repair(concatenation of the pieces)``: a high
    surrogate that ends a piece is held back until the next piece shows whether a low one
    completes it.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The repaired text that can be given out now (maybe ``""``)."""
        text = self._held + piece
        self._held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        return repair(text)

    def flush(self) -> str:
        """What is still held back, repaired (a held high surrogate becomes U+FFFD)."""
        text, self._held = self._held, ""
        return repair(text)
