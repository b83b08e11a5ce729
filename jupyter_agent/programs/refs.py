"""Program references: ``name@vN`` and ``name@vN#hash`` (pure).

A run records every program it used as ``name@vN#hash`` (DESIGN section 7: the log header's
and the run summary's and the turn record's ``programs``). ``hash`` is the first
:data:`HASH_CHARS` hex digits of the version's content hash (the full sha256 is kept in the
store); older logs recorded ``name@vN`` without one (``hash`` None: not checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["HASH_CHARS", "NAME_RE", "ProgramRef", "family_of", "parse_ref"]

#: The hex digits of a content hash a reference shows.
HASH_CHARS: Final = 12
#: A program family's name: lower-case letters, digits, ``_`` and ``-``, 1-40 long.
NAME_RE: Final = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_REF_RE: Final = re.compile(r"([a-z][a-z0-9_-]{0,39})@v([1-9][0-9]{0,5})(?:#([0-9a-f]{6,64}))?")


@dataclass(frozen=True, order=True)
class ProgramRef:
    """One version of one program: ``name`` (the family), ``version`` (>= 1), ``hash``
    (hex, :data:`HASH_CHARS` long in a run's record; None when not recorded)."""

    name: str
    version: int
    hash: str | None = None

    @property
    def key(self) -> str:
        """``name@vN``."""
        return f"{self.name}@v{self.version}"

    @property
    def text(self) -> str:
        """``name@vN#hash`` (``name@vN`` without a hash)."""
        return f"{self.key}#{self.hash[:HASH_CHARS]}" if self.hash else self.key

    def same_content(self, full_hash: str) -> bool:
        """True when this reference's hash is a prefix of ``full_hash`` (or it has none)."""
        return self.hash is None or full_hash.startswith(self.hash)

    def __str__(self) -> str:
        return self.text


def parse_ref(text: str) -> ProgramRef:
    """``name@vN`` or ``name@vN#hash`` as a :class:`ProgramRef`; ValueError otherwise."""
    match = _REF_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a program reference (name@vN or name@vN#hash): {text!r:.80}")
    name, version, digest = match.groups()
    return ProgramRef(name, int(version), digest)


def family_of(text: str) -> str:
    """The family of ``name``, ``name@vN`` or ``name@vN#hash``: ``toolcaller@v4`` ->
    ``toolcaller``."""
    return text.split("@", 1)[0].split("#", 1)[0]
