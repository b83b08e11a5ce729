"""``autorecall@v1``: the recall step of ``toolcaller@v4``, a pure sub-program.

Before the run's first model call (DESIGN section 7) the loop reads the memory
config and, with it, recalls what memory and the user's earlier chats hold about the
message:

1. :func:`read_memory`: ``config.get {key: "memory"}`` -> ``{categories: [{category,
   count}], recall: {enabled, k, budget_tokens, threshold}}`` (:class:`MemoryConfig`; the
   host reads the categories from the store at that moment, so a replay reads the log, not
   today's store). A failed read is no categories and no recall.
2. :func:`autorecall`: when recall is enabled and the message has query terms
   (:func:`~jupyter_agent.core.memory.terms.query_terms`), ONE effect ``recall.search
   {query, k, threshold, budget_tokens, chat_id, exclude_since, exclude_chunks}`` ->
   ``{hits: [RecallHit JSON]}``, the hits already packed by the host with
   :func:`~jupyter_agent.core.memory.recall.pack_hits` (they are packed again here: a no-op for
   packed hits, a bound for any other). ``exclude_since`` / ``exclude_chunks`` leave out
   what the run's window already shows. No hits, a failed search or an unreadable answer:
   None, and nothing is injected (a recall never fails the run).
3. :class:`Recalled` is what the loop injects: :meth:`Recalled.messages` (an assistant
   message with the synthetic ``run_cell`` call, a user message with its result, placed
   after the boot window and before the user's message) and :meth:`Recalled.record` (the
   turn record's ``recall``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.core.memory.recall import (
    CALL_ID,
    pack_hits,
    recall_code,
    recall_tokens,
    render_hits,
)
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.core.memory.terms import query_terms
from jupyter_agent.core.turns import RECALL_TEXT_CHARS, RecallRef, TurnRecall
from jupyter_agent.effects import CONFIG_GET, RECALL_SEARCH, Effect, EffectGen
from jupyter_agent.messages import Message, Text, ToolCall, ToolResult

__all__ = [
    "AUTORECALL_PROGRAM",
    "QUERY_MAX_CHARS",
    "MemoryConfig",
    "RecallSettings",
    "Recalled",
    "autorecall",
    "read_memory",
    "recall_request",
    "recalled",
    "search",
]

#: The sub-program's recorded name (the turn record's ``recall.program``).
AUTORECALL_PROGRAM: Final = "autorecall@v1"
#: The most of the message the search is given (only its first query terms count).
QUERY_MAX_CHARS: Final = 2000


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float(value: Any, default: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else default


@dataclass(frozen=True, kw_only=True)
class RecallSettings:
    """How autorecall runs (the RunManager traits ``recall``, ``recall_k``,
    ``recall_budget_tokens``, ``recall_threshold``). Off unless the host says so."""

    enabled: bool = False
    k: int = 5
    budget_tokens: int = 800
    threshold: float = 0.3

    @classmethod
    def from_json(cls, data: Any) -> RecallSettings:
        """Read the config value; what is missing or of the wrong type takes its default."""
        if not isinstance(data, Mapping):
            return cls()
        base = cls()
        return cls(
            enabled=data.get("enabled") is True,
            k=max(0, _int(data.get("k"), base.k)),
            budget_tokens=max(0, _int(data.get("budget_tokens"), base.budget_tokens)),
            threshold=_float(data.get("threshold"), base.threshold),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "threshold": self.threshold,
        }


@dataclass(frozen=True, kw_only=True)
class MemoryConfig:
    """The ``config.get memory`` answer: the categories in use and the recall settings."""

    categories: tuple[tuple[str, int], ...] = ()
    recall: RecallSettings = RecallSettings()

    @classmethod
    def from_json(cls, data: Any) -> MemoryConfig:
        """Read the answer; anything unreadable is left out (never raises)."""
        if not isinstance(data, Mapping):
            return cls()
        categories: list[tuple[str, int]] = []
        raw = data.get("categories")
        for item in raw if isinstance(raw, list) else ():
            if isinstance(item, Mapping) and isinstance(item.get("category"), str):
                categories.append((item["category"], max(0, _int(item.get("count"), 0))))
        return cls(
            categories=tuple(categories), recall=RecallSettings.from_json(data.get("recall"))
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "categories": [{"category": c, "count": n} for c, n in self.categories],
            "recall": self.recall.to_json(),
        }


@dataclass(frozen=True, kw_only=True)
class Recalled:
    """What one recall found and how the model is shown it."""

    query: str
    k: int
    hits: tuple[RecallHit, ...]
    #: The run's chat (its own hits read ``this chat``).
    chat_id: str | None = None

    @property
    def code(self) -> str:
        """The synthetic call's code (:func:`~jupyter_agent.core.memory.recall.recall_code`)."""
        return recall_code(self.query, self.k)

    @property
    def text(self) -> str:
        """The synthetic result's text (:func:`~jupyter_agent.core.memory.recall.render_hits`)."""
        return render_hits(self.hits, self.chat_id)

    def messages(self) -> tuple[Message, Message]:
        """The synthetic ``run_cell`` call (assistant) and its result (user)."""
        call = ToolCall(id=CALL_ID, name="run_cell", args={"code": self.code})
        result = ToolResult(call_id=CALL_ID, content=(Text(text=self.text),))
        return (
            Message(role="assistant", parts=(call,)),
            Message(role="user", parts=(result,)),
        )

    def record(self) -> TurnRecall:
        """The turn record's ``recall``."""
        refs = tuple(
            RecallRef(
                kind=h.kind,
                id=h.id,
                chat_id=h.chat_id,
                score=h.score,
                text=h.text[:RECALL_TEXT_CHARS],
            )
            for h in self.hits
        )
        tokens = recall_tokens(self.hits, self.chat_id)
        return TurnRecall(program=AUTORECALL_PROGRAM, hits=refs, tokens=tokens)


def read_memory() -> EffectGen[MemoryConfig]:
    """``config.get {key: "memory"}`` (see the module docstring)."""
    result = yield Effect(name=CONFIG_GET, data={"key": "memory"})
    if result.error is not None:
        return MemoryConfig()
    return MemoryConfig.from_json(result.data)


def _hits(data: Any) -> list[RecallHit] | None:
    raw = data.get("hits") if isinstance(data, Mapping) else None
    if not isinstance(raw, list):
        return None
    try:
        return [RecallHit.from_json(h) for h in raw]
    except (ValueError, TypeError):
        return None


def autorecall(
    query: str,
    settings: RecallSettings,
    *,
    chat_id: str,
    exclude_since: str | None,
    exclude_chunks: Sequence[tuple[int, int]],
) -> EffectGen[Recalled | None]:
    """Recall for the message ``query`` (see the module docstring); None: inject nothing."""
    data = recall_request(
        query,
        settings,
        chat_id=chat_id,
        exclude_since=exclude_since,
        exclude_chunks=exclude_chunks,
    )
    if data is None:
        return None
    return (yield from search(data))


def recall_request(
    query: str,
    settings: RecallSettings,
    *,
    chat_id: str,
    exclude_since: str | None,
    exclude_chunks: Sequence[tuple[int, int]],
) -> dict[str, Any] | None:
    """The ``recall.search`` intent :func:`autorecall` yields for the message ``query``
    (None: it yields none: recall off, ``k`` 0, no query terms). Pure and total: a host
    that knows the same inputs computes the same intent (``toolcaller@v7`` starts the
    search before the program asks, and answers with it only when the intents are equal)."""
    query = query[:QUERY_MAX_CHARS]
    if not settings.enabled or settings.k <= 0 or not query_terms(query):
        return None
    return {
        "query": query,
        "k": settings.k,
        "threshold": settings.threshold,
        "budget_tokens": settings.budget_tokens,
        "chat_id": chat_id,
        "exclude_since": exclude_since,
        "exclude_chunks": [[level, first] for level, first in exclude_chunks],
    }


def search(data: dict[str, Any]) -> EffectGen[Recalled | None]:
    """ONE ``recall.search`` with the intent ``data`` (:func:`recall_request`'s); what it
    shows the model (:func:`recalled`), None for a failed search or nothing found."""
    result = yield Effect(name=RECALL_SEARCH, data=data)
    return recalled(data, result.data) if result.ok else None


def recalled(intent: Mapping[str, Any], answer: Any) -> Recalled | None:
    """What a ``recall.search`` with this intent and (successful) answer showed the model:
    the answer's hits (at most ``k``) packed by the intent's threshold and budget; None
    when none is left or the answer cannot be read. The loop and the trace's view of the
    step both read a recall through this one function."""
    hits = _hits(answer)
    k = _int(intent.get("k"), 0)
    if not hits or k <= 0:
        return None
    threshold = _float(intent.get("threshold"), RecallSettings().threshold)
    budget = _int(intent.get("budget_tokens"), 0)
    chat_id = intent.get("chat_id") if isinstance(intent.get("chat_id"), str) else None
    kept = pack_hits(hits[:k], threshold, budget, chat_id)
    if not kept:
        return None
    query = str(intent.get("query") or "")
    return Recalled(query=query, k=k, hits=tuple(kept), chat_id=chat_id)
