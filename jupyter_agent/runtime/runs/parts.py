"""What one run is given: its configuration snapshot and the long-lived services.

:class:`RunConfig` is what the loop reads through ``config.get`` (taken at the run's
start, so a replay never reads today's settings); :class:`RunServices` are owned by the
run manager and shared by its runs; :func:`read_history` answers ``config.get``
``history`` from the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_agent.core.history.window import (
    ChunkSummary,
    HistoryWindow,
    anchor,
    boot_window,
    tail_size,
    turn_tokens,
)
from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.runs.approvals import ApprovalWaits
from jupyter_agent.runtime.runs.ceilings import RunCeilings
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber

if TYPE_CHECKING:
    from jupyter_agent.llm.transport import Transport
    from jupyter_agent.programs.registry import ProgramRegistry
    from jupyter_agent.runtime.mcp.hub import McpHub
    from jupyter_agent.runtime.memory.embedder import Embedder
    from jupyter_agent.runtime.memory.service import MemoryService
    from jupyter_agent.runtime.notebook.person_kernels import PersonKernels
    from jupyter_agent.runtime.notebook.proposals import ProposalService
    from jupyter_agent.runtime.settings.agents import AgentRegistry
    from jupyter_agent.store.history.chunk_store import WindowReads
    from jupyter_agent.store.repo import Store

__all__ = [
    "NotebookReads",
    "RunConfig",
    "RunServices",
    "ScrubbingPool",
    "read_anchored",
    "read_history",
]

_HISTORY_ATTEMPTS = 3  # reads a store that is briefly unavailable gets


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """The configuration one run sees through ``config.get`` (a snapshot taken at start).

    ``tiers`` maps tier names to ``{provider, model, base_url, api_key_ref, api}`` (key
    references only, never key values); a missing ``classify`` or ``vision`` tier falls back
    to ``codegen``. ``profiles`` maps model names to profile overrides.
    """

    tiers: dict[str, dict[str, Any]]
    #: The run's ceilings (a plain mapping given here is taken as they are recorded).
    ceilings: RunCeilings
    spaces: dict[str, Any]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``{chunk_turns, l2_chunks}``: how the chat's history is chunked (RunManager traits).
    history_layout: dict[str, int] = field(
        default_factory=lambda: {"chunk_turns": 10, "l2_chunks": 5}
    )
    #: ``{enabled, k, budget_tokens, threshold}``: autorecall's settings (RunManager traits
    #: ``recall``, ``recall_k``, ``recall_budget_tokens``, ``recall_threshold``), answered
    #: with the memory categories to ``config.get memory``.
    recall: dict[str, Any] = field(
        default_factory=lambda: {"enabled": True, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    )
    #: The deadline of a ``recall.search`` (RunManager trait ``recall_timeout_ms``): the
    #: host's, not the program's (it is not in the ``config.get memory`` answer).
    recall_timeout_ms: int = 250
    #: The agent the run answers as: its spaces, tiers and program versions.
    agent: str = "agent"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ceilings", RunCeilings.of(self.ceilings))

    def get(self, key: str) -> Any:
        """The value of a ``config.get`` key (None when unknown). ``history`` and ``memory``
        are not config alone: the driver reads them from the store (:func:`read_history`,
        :func:`~jupyter_agent.runtime.memory.search.memory_answer`)."""
        if key == "ceilings":
            return self.ceilings.to_json()
        if key == "history_layout":
            return dict(self.history_layout)
        if key == "spaces":
            return self.spaces
        if key.startswith("llm.tier."):
            name = key.removeprefix("llm.tier.")
            return self.tiers.get(name) or (
                self.tiers.get("codegen") if name in ("classify", "vision") else None
            )
        if key.startswith("llm.profile."):
            return self.profiles.get(key.removeprefix("llm.profile."))
        return None


class NotebookReads(Protocol):
    """Where the in-cell ``notebook`` app reads notebooks (a
    :class:`~jupyter_agent.runtime.notebook.app.NotebookSource`)."""

    async def read(self, path: str) -> Any:
        """The notebook at the clean contents path ``path``."""
        ...


@dataclass(kw_only=True)
class RunServices:
    """The long-lived services a run uses (owned by the run manager)."""

    transport: Transport
    #: The kernel pool as runs see it (its handles scrub what the kernels send).
    pool: ScrubbingPool
    store: Store
    mailbox: Mailbox
    events: EventBus
    root_dir: str
    #: Cleans what the run's kernels send (the pool's handles already apply it).
    scrubber: Scrubber = NO_SECRETS
    #: Called with the chat's id when one of its runs has ended (its turn stored): the
    #: history scheduler's ``kick``. Synchronous and non-blocking; a no-op by default.
    after_turn: Callable[[str], None] = field(default=lambda chat_id: None)
    #: The embedder: hybrid recall when an embed tier is set (None: lexical only).
    embedder: Embedder | None = None
    #: The in-cell ``memory`` app's service; None: ``memory.*`` calls fail with a clear error.
    memory: MemoryService | None = None
    #: Which version of a program a new run uses, and the recorded versions replay loads.
    #: None: the built-in defaults only.
    programs: ProgramRegistry | None = None
    #: The agents this server hosts; None: one, "agent".
    agents: AgentRegistry | None = None
    #: Where the in-cell ``notebook`` app reads notebooks; None: ``notebook.*`` fails clearly.
    notebooks: NotebookReads | None = None
    #: The proposal service ``notebook.propose`` creates proposals with; None: proposals
    #: fail clearly.
    proposals: ProposalService | None = None
    #: The open ``approval.wait`` effects of the runs.
    approvals: ApprovalWaits = field(default_factory=ApprovalWaits)
    #: The MCP servers the in-cell ``mcp`` app calls; None: ``config.get mcp`` answers no
    #: servers and ``mcp.*`` fails clearly.
    mcp: McpHub | None = None
    #: The person's kernels the ``notebook`` app looks at (``variables``, ``fetch``, ``run``,
    #: ...); None: those calls fail clearly.
    person_kernels: PersonKernels | None = None


class ScrubbingPool:
    """The kernel pool as runs see it: every handle it lends cleans what its kernel sends
    with ``scrubber`` (:mod:`jupyter_agent.runtime.secrets`); all else is the pool's."""

    def __init__(self, pool: Any, scrubber: Scrubber) -> None:
        self.pool = pool
        self.scrubber = scrubber

    async def acquire(self, *args: Any, **kwargs: Any) -> Any:
        """The pool's ``acquire``, its handle given this scrubber before any cell runs."""
        handle = await self.pool.acquire(*args, **kwargs)
        handle.scrubber = self.scrubber
        return handle

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


async def read_history(
    store: Store, chat_id: str, budget_tokens: object, layout: dict[str, int]
) -> Any:
    """The result of ``config.get`` ``history``: the chat's earlier turns, read from
    ``store`` in a worker thread (never on the event loop).

    With an int ``budget_tokens`` (``toolcaller@v3``): only the window that budget keeps,
    as :class:`~jupyter_agent.core.history.window.HistoryWindow` JSON, in O(window) rows,
    by the anchored rule of ``layout`` (``{chunk_turns, l2_chunks}``) with the chunk
    summaries it uses. Without a budget (v1, v2): every turn record, oldest first.
    A store still unavailable after a few tries raises (the loop gets the error).
    """
    for attempt in range(1, _HISTORY_ATTEMPTS + 1):
        try:
            if isinstance(budget_tokens, int) and not isinstance(budget_tokens, bool):
                window = await asyncio.to_thread(
                    read_anchored, store, chat_id, budget_tokens, dict(layout)
                )
                return window.to_json()
            turns = await asyncio.to_thread(store.list_turns, chat_id)
            return [t.to_json() for t in turns]
        except StoreUnavailable:
            if attempt == _HISTORY_ATTEMPTS:
                raise
            await asyncio.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


def read_anchored(
    store: Store, chat_id: str, budget_tokens: int, layout: dict[str, int]
) -> HistoryWindow:
    """The anchored window's history (blocking; see :mod:`jupyter_agent.core.history.window`): the
    chat's summaries, then its newest turns in doubling batches until
    :func:`~jupyter_agent.core.history.window.tail_size` can tell how many the window keeps.
    O(window) turns (and the chat's summary rows, a tenth of its turns by default), all
    read in one read transaction (:meth:`~jupyter_agent.store.repo.Store.window_reads`)."""
    with store.window_reads(chat_id) as reads:
        return _anchored(reads, budget_tokens, layout)


def _anchored(reads: WindowReads, budget_tokens: int, layout: dict[str, int]) -> HistoryWindow:
    count = reads.turn_count()
    chunks = tuple(
        ChunkSummary(level=c.level, first_turn=c.first_turn, last_turn=c.last_turn, text=c.text)
        for c in reads.list_chunks()
    )
    chunk_turns = int(layout.get("chunk_turns") or 10)
    newest: list[Any] = []  # oldest first: positions count - len(newest) + 1 .. count
    costs: list[int] = []  # their turn_tokens, newest first
    batch = 8
    while True:
        complete = len(newest) >= count
        # Every rule keeps at most the turns that fit the budget (and one more to clip):
        # read until they no longer fit, then decide once (deciding per batch re-ran the
        # summary pick at every chunk boundary for every batch).
        if not complete and sum(costs) <= budget_tokens:
            last = count - len(newest)
            first = max(1, last - batch + 1)
            read = reads.turns_at(first, last)
            newest = [*read, *newest]
            costs.extend(turn_tokens(t) for t in reversed(read))
            batch = min(batch * 2, 256)
            continue
        keep = tail_size(
            costs,
            budget_tokens,
            complete=complete,
            turn_count=count,
            chunk_turns=chunk_turns,
            chunks=chunks,
        )
        if keep is not None:
            break
        # Undecided: a chunk boundary lies just past the turns read (at most a batch more).
        last = count - len(newest)
        if last < 1:
            raise AssertionError("tail_size undecided over the whole chat")
        read = reads.turns_at(max(1, last - batch + 1), last)
        newest = [*read, *newest]
        costs.extend(turn_tokens(t) for t in reversed(read))
    kept = newest[len(newest) - keep :] if keep else []
    omitted = count - len(kept)
    # The anchor chosen over all of the summaries (0: the sliding rule), recorded: the
    # run's window must not choose again from only the summaries recorded below.
    start = anchor(
        count,
        costs,
        budget_tokens,
        chunk_turns=chunk_turns,
        chunks=chunks,
        complete=len(newest) >= count,
    )
    anchor_at = start if start is not None and budget_tokens > 0 else 0
    # Only the summaries this window shows go in the answer (and so in the run's log):
    # picking again from them gives them again (see Window.summaries), and all of a long
    # chat's summaries would make every run's log grow with the chat. A window that keeps
    # every turn shows none (nothing is older): not built here, the program builds it.
    shown = (
        boot_window(
            kept,
            budget_tokens=budget_tokens,
            chunks=chunks,
            first_position=omitted + 1,
            older=omitted,
            chunk_turns=chunk_turns,
            anchor_at=anchor_at,
        ).summaries
        if omitted
        else ()
    )
    return HistoryWindow(
        turns=tuple(kept),
        omitted=omitted,
        chunks=shown,
        layout=dict(layout),
        anchor=anchor_at,
    )
