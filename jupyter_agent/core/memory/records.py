"""Memory facts and recall hits as data: the shapes every layer shares (pure).

:class:`Memory` is one stored fact, as REST JSON (DESIGN section 7)::

    {id, text, category, chat_id, turn_id, author, created, updated, run_id}

``chat_id``/``run_id`` name where the fact was saved (None when the person added it from
the Memory view or the CLI); ``turn_id`` is the turn of that run once it is stored (the
store resolves it). ``author`` is ``agent`` (saved by ``memory.save`` in a cell) or
``person`` (REST, panel, CLI). ``owner`` is the scope (the server's user is ``""``; each
Jupyter identity has its own); it never leaves the server.

:class:`RecallHit` is one result of a recall search (``recall.search``, ``memory.search``)::

    {kind: memory|turn|chunk, id, chat_id, text, score, created,
     category?, chat_title?, level?, first_turn?, last_turn?}

``score`` is in [0, 1] (how much of the query the hit covers, weighted by how rare each
term is: :mod:`jupyter_agent.core.memory.terms`); ``text`` is what the model is shown
(a turn: its message and final reply; a chunk: its summary), clipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from jupyter_agent.codec import OMIT_NONE, dump_dict, load

__all__ = [
    "AUTHORS",
    "DEFAULT_CATEGORY",
    "HIT_KINDS",
    "MAX_CATEGORY_CHARS",
    "MAX_MEMORY_CHARS",
    "Author",
    "HitKind",
    "Memory",
    "RecallHit",
]

Author = Literal["agent", "person"]
AUTHORS: Final = ("agent", "person")
HitKind = Literal["memory", "turn", "chunk"]
HIT_KINDS: Final = ("memory", "turn", "chunk")
DEFAULT_CATEGORY: Final = "general"
#: A fact is a sentence or a short paragraph, not a document.
MAX_MEMORY_CHARS: Final = 2000
MAX_CATEGORY_CHARS: Final = 40


@dataclass(frozen=True, kw_only=True)
class Memory:
    """One stored fact (see the module docstring); ``owner`` is not part of the JSON."""

    id: str
    text: str
    category: str
    chat_id: str | None = None
    turn_id: str | None = None
    author: Author = "person"
    created: str
    updated: str
    run_id: str | None = None
    owner: str = field(default="", metadata={"exclude": True})

    def to_json(self) -> dict[str, Any]:
        """The REST shape (``owner`` left out)."""
        data = dump_dict(self)
        data.pop("owner", None)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Memory:
        """Read the REST shape (``owner`` is the default scope)."""
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class RecallHit:
    """One recall result (see the module docstring)."""

    kind: HitKind
    id: str
    chat_id: str | None = None
    text: str
    score: float
    created: str
    category: str | None = field(default=None, metadata=OMIT_NONE)
    chat_title: str | None = field(default=None, metadata=OMIT_NONE)
    level: int | None = field(default=None, metadata=OMIT_NONE)
    first_turn: int | None = field(default=None, metadata=OMIT_NONE)
    last_turn: int | None = field(default=None, metadata=OMIT_NONE)

    def to_json(self) -> dict[str, Any]:
        """The JSON shape (the ``recall.search`` result, the ``recall`` event)."""
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecallHit:
        """Read the JSON shape."""
        return load(cls, data)
