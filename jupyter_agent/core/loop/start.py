"""``toolcaller@v7``'s one read at its start: ``config.get {key: "start", tier: "codegen"}``.

Before v7 a turn's set-up asked one ``config.get`` per thing it reads (``ceilings``,
``spaces``, ``llm.tier.codegen``, ``llm.profile.<model>``, ``history``, ``memory``,
``mcp``), each a logged intent and result and a round trip through the driver. v7 asks
once; the answer (:class:`StartAnswer`, JSON)::

    {"tier_name": "codegen", "ceilings": {...}, "spaces": {...},
     "tier": {provider, model, ...} | null, "profile": {overrides} | null,
     "budget_tokens": N | null, "history": HistoryWindow JSON | null,
     "history_error": "..." (only when the history could not be read),
     "memory": {categories, recall}, "mcp": {servers},
     "findable": {"memories": N, "turns": N}}

- ``tier`` and ``profile`` are what ``llm.tier.<name>`` and ``llm.profile.<model>`` answer;
  :meth:`StartAnswer.resolve_tier` builds the :class:`~jupyter_agent.llm.tiers.Tier` (a bad
  one raises the ConfigError v6's ``resolve_tier`` raised).
- ``history`` is the window of ``budget_tokens`` (:func:`history_budget` of the ceilings and
  the tier's profile: the host computes it with this same function; None with a bad tier,
  which ends the run before the history matters). ``history`` None with ``history_error``:
  it could not be read (the run ends saying so, as v6's did).
- ``memory`` is v6's ``config.get memory`` answer, ``mcp`` its ``config.get mcp`` one.
- ``findable``: what recall could find for the run's owner, as the host's counters know it
  (:class:`Findable`): the owner's memories and stored turns (every chat's). The program
  searches (``recall.search``) only when recall is on and :meth:`Findable.worth_searching`
  says so (:func:`recall_plan`): a chat-free, memory-free owner's turn makes no search.
- A failed read (an error result) is :attr:`StartAnswer.error`: the run says its settings
  could not be read and ends.

:func:`planned_recall` is the ``recall.search`` intent the program will yield given the
answer and the opening message: the host computes it with the program's own functions to
start the search early, and answers the program's intent with that search only when the
two are equal (else it searches afresh): the log holds what the program asked and got.

Pure: data and generators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.history.window import Window
from jupyter_agent.core.loop.opening import Past, exclusions
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import MemoryConfig, RecallSettings, recall_request
from jupyter_agent.effects import CONFIG_GET, Effect, EffectGen
from jupyter_agent.exceptions import ConfigError
from jupyter_agent.llm.tiers import Tier, tier_from_config

__all__ = [
    "START_KEY",
    "Findable",
    "StartAnswer",
    "history_budget",
    "planned_recall",
    "read_start",
    "recall_plan",
    "start_intent",
]

#: The ``config.get`` key of v7's start read.
START_KEY: Final = "start"


def history_budget(ceilings: Ceilings, tier: Tier) -> int:
    """The tokens of the boot window: the ceiling's, at most a quarter of the context."""
    return min(ceilings.history_budget_tokens, tier.profile.context_window // 4)


def _count(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return max(0, value) if ok else 0


@dataclass(frozen=True, kw_only=True)
class Findable:
    """What recall could find for a run's owner: their memories and their stored turns (in
    every chat, this one's included), as the host counted them."""

    memories: int = 0
    turns: int = 0

    def worth_searching(self, shown_turns: int) -> bool:
        """Whether a search could find anything the window does not show: a memory, or a
        turn beyond the ``shown_turns`` the window shows whole (another chat's, or this
        chat's older ones). A chunk summary only summarises turns, so it counts through
        them (one over the window's own turns is what the window shows already)."""
        return self.memories > 0 or self.turns > shown_turns

    def to_json(self) -> dict[str, int]:
        return {"memories": self.memories, "turns": self.turns}

    @classmethod
    def from_json(cls, data: Any) -> Findable:
        """The recorded counts; anything unreadable counts 0."""
        if not isinstance(data, Mapping):
            return cls()
        return cls(memories=_count(data.get("memories")), turns=_count(data.get("turns")))


def _mapping(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


@dataclass(frozen=True, kw_only=True)
class StartAnswer:
    """The answer of ``config.get {key: "start"}`` (see the module docstring)."""

    tier_name: str = "codegen"
    ceilings: dict[str, Any] = field(default_factory=dict)
    spaces: dict[str, Any] = field(default_factory=dict)
    tier: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    budget_tokens: int | None = None
    history: HistoryWindow | None = None
    history_error: str | None = None
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    mcp: McpCatalogue = field(default_factory=McpCatalogue)
    findable: Findable = field(default_factory=Findable)
    #: The read failed (an error result): the run ends saying so.
    error: str | None = None

    @property
    def limits(self) -> Ceilings:
        """The ceilings, typed."""
        return Ceilings.from_json(self.ceilings)

    def resolve_tier(self) -> Tier:
        """The tier (ConfigError: not configured, bad, or the read failed)."""
        if self.error is not None:
            raise ConfigError(f"its settings could not be read ({self.error})")
        return tier_from_config(self.tier_name, self.tier, self.profile)

    def past(self) -> Past | None:
        """The chat's earlier turns as the window holds them (None: not read)."""
        return None if self.history is None else Past.of_window(self.history)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tier_name": self.tier_name,
            "ceilings": self.ceilings,
            "spaces": self.spaces,
            "tier": self.tier,
            "profile": self.profile,
            "budget_tokens": self.budget_tokens,
            "history": None if self.history is None else self.history.to_json(),
        }
        if self.history_error is not None:
            out["history_error"] = self.history_error
        out["memory"] = self.memory.to_json()
        out["mcp"] = self.mcp.to_json()
        out["findable"] = self.findable.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any) -> StartAnswer:
        """The recorded answer (never raises: what is unreadable takes its default; not an
        object at all: an answer with ``error``)."""
        if not isinstance(data, Mapping):
            return cls(error="the start answer is not an object")
        budget = data.get("budget_tokens")
        history = data.get("history")
        error = data.get("history_error")
        return cls(
            tier_name=str(data.get("tier_name") or "codegen"),
            ceilings=_mapping(data.get("ceilings")) or {},
            spaces=_mapping(data.get("spaces")) or {},
            tier=_mapping(data.get("tier")),
            profile=_mapping(data.get("profile")),
            budget_tokens=budget
            if isinstance(budget, int) and not isinstance(budget, bool)
            else None,
            history=HistoryWindow.from_json(history) if isinstance(history, Mapping) else None,
            history_error=str(error) if error is not None else None,
            memory=MemoryConfig.from_json(data.get("memory")),
            mcp=McpCatalogue.from_json(data.get("mcp")),
            findable=Findable.from_json(data.get("findable")),
        )

    def config_view(self) -> dict[str, Any]:
        """The answer as v6's separate ``config.get`` keys would have answered it (what the
        trace's readers look up by key): ``ceilings``, ``spaces``, ``llm.tier.<name>``,
        ``llm.profile.<model>``, ``history``, ``memory``, ``mcp``."""
        view: dict[str, Any] = {"ceilings": self.ceilings, "spaces": self.spaces}
        view[f"llm.tier.{self.tier_name}"] = self.tier
        model = (self.tier or {}).get("model")
        if isinstance(model, str):
            view[f"llm.profile.{model}"] = self.profile
        if self.history is not None:
            view["history"] = self.history.to_json()
        view["memory"] = self.memory.to_json()
        view["mcp"] = self.mcp.to_json()
        return view


def start_intent(tier: str = "codegen") -> dict[str, Any]:
    """The intent data of the start read."""
    return {"key": START_KEY, "tier": tier}


def read_start(tier: str = "codegen") -> EffectGen[StartAnswer]:
    """``config.get {key: "start", tier}`` (see the module docstring)."""
    result = yield Effect(name=CONFIG_GET, data=start_intent(tier))
    if result.error is not None:
        return StartAnswer(tier_name=tier, error=str(result.error.get("message") or "failed"))
    return StartAnswer.from_json(result.data)


def recall_plan(
    past: Past,
    shown: Window,
    settings: RecallSettings,
    findable: Findable,
    text: str,
    chat_id: str,
) -> dict[str, Any] | None:
    """The ``recall.search`` intent a v7 turn yields for the message ``text`` (None: no
    search: recall is off, the message has no query terms, or nothing is findable beyond
    the window ``shown`` of ``past``)."""
    if not findable.worth_searching(shown.turns_included):
        return None
    since, chunks = exclusions(past.turns, shown)
    return recall_request(
        text, settings, chat_id=chat_id, exclude_since=since, exclude_chunks=chunks
    )


def planned_recall(answer: StartAnswer, text: str, chat_id: str) -> dict[str, Any] | None:
    """The ``recall.search`` intent a v7 turn given ``answer`` and the opening message
    ``text`` will yield (None: none, or the run ends before it: a bad tier, no history).
    The program's own functions: equal inputs give an equal intent."""
    past = answer.past()
    if past is None:
        return None
    try:
        tier = answer.resolve_tier()
    except ConfigError:
        return None
    shown = past.boot(history_budget(answer.limits, tier))
    return recall_plan(past, shown, answer.memory.recall, answer.findable, text, chat_id)
