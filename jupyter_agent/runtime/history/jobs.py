"""The history scheduler: makes the chunk summaries chats are due, in the background.

:class:`HistoryScheduler` keeps every chat's closed chunks summarised ("off the
critical path"):

- :meth:`~HistoryScheduler.kick` (after a chat's turn is stored; synchronous, never
  blocks) starts the chat's worker, or tells the running one to look again. The worker
  asks the store for the chat's due spans (``Store.pending_spans``: oldest first, level 1
  before level 2) and makes them one at a time, each in a summary run of its own
  (:func:`~jupyter_agent.runtime.history.driver.run_history`), until none is due;
- at most ``max_concurrent`` summary runs go at once in the whole server (a semaphore), so
  summaries never crowd out the chats' own model calls; nothing here is awaited by a run;
- a failure (the provider down, no ready ``classify`` / ``codegen`` tier, the store
  unavailable) is logged and retried later by the same worker with a backoff
  (``first_backoff_s`` doubling to ``max_backoff_s``); no turn is lost, since a summary
  is made from the stored turns whenever it succeeds. :meth:`~HistoryScheduler.status` is
  the ``history`` part of ``GET agent/status``: ``{pending, failing, last_error}``
  (spans due, chats whose last try failed, the newest failure's message while any fails);
- :meth:`~HistoryScheduler.resume` (at a server's start, after crash recovery) kicks every
  chat with due spans; :meth:`~HistoryScheduler.stop` (at shutdown) cancels the workers:
  a summary run cut there stores nothing and is made again at the next start
  (``chunk.store`` is idempotent: the first write of a span wins).

A level-1 job's items are its turns as the window renders them
(:func:`~jupyter_agent.core.history.window.render_turn`); a level-2 job's the texts of its level-1
summaries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from jupyter_agent.core.demo import DEMO_STAND_IN, is_demo_model
from jupyter_agent.core.events.types import SummaryEvent
from jupyter_agent.core.history.chunks import ChunkSpan, StoredChunk
from jupyter_agent.core.history.program import HistoryJob
from jupyter_agent.core.history.window import render_turn
from jupyter_agent.core.tokens import chars_for_tokens, count_tokens
from jupyter_agent.runtime.history.driver import run_history
from jupyter_agent.runtime.history.naming import ChatNamer
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT

__all__ = ["HistoryScheduler", "build_job"]

log = logging.getLogger(__name__)


#: A turn longer than this (a big paste) is summarised from its head and tail: a request
#: over the classify model's context would fail on every try.
ITEM_TOKENS: Final = 2_000
#: Tries of one span before it is set aside (until the next server start) so the chat's
#: later chunks still get their summaries; a missing summary is a gap the window skips.
MAX_TRIES: Final = 5


def _clip_item(text: str) -> str:
    if count_tokens(text) <= ITEM_TOKENS:
        return text
    room = chars_for_tokens(ITEM_TOKENS)
    marker = "\n[... the middle of this turn is left out ...]\n"
    head = room * 2 // 3
    return text[:head] + marker + text[-(room - head - len(marker)) :]


def _has_tier(config: RunConfig) -> bool:
    """Whether a summary run has a model to call (classify, else codegen)."""
    return bool(config.get("llm.tier.classify") or config.get("llm.tier.codegen"))


def build_job(store: Any, chat_id: str, span: ChunkSpan) -> HistoryJob:
    """The job of ``span`` read from the store (blocking: call it in a worker thread).

    ValueError when the span's material is not all there (fewer turns, or level-1
    summaries, than it spans).
    """
    if span.level == 1:
        turns = store.turns_at(chat_id, span.first_turn, span.last_turn)
        if len(turns) != span.last_turn - span.first_turn + 1:
            raise ValueError(f"turns {span.first_turn}-{span.last_turn} are not all stored")
        items = []
        for turn in turns:
            user, assistant = render_turn(turn)
            if is_demo_model(turn.model):  # the demo's script is not the chat's history
                assistant = DEMO_STAND_IN
            items.append(_clip_item(f"User: {user}\n\nAgent: {assistant}"))
    else:
        parts = sorted(
            (
                c
                for c in store.list_chunks(chat_id)
                if c.level == 1
                and span.first_turn <= c.first_turn
                and c.last_turn <= span.last_turn
            ),
            key=lambda c: c.first_turn,
        )
        if not parts or parts[-1].last_turn != span.last_turn:
            raise ValueError(f"level-1 summaries of {span.first_turn}-{span.last_turn} missing")
        items = [c.text for c in parts]
    return HistoryJob(
        chat_id=chat_id,
        level=span.level,
        first_turn=span.first_turn,
        last_turn=span.last_turn,
        items=tuple(items),
    )


class HistoryScheduler:
    """Makes the summaries chats are due, in the background (see the module docstring).

    ``run_config(agent, owner=owner)`` gives the snapshot each summary run of a chat of
    ``agent`` and ``owner`` starts with (that agent's and owner's tiers that are ready
    now, its spaces); logs go in ``runs_dir``; ``chunk_turns`` and ``l2_chunks`` are the
    chunk layout
    (``core.chunks``); None (each): the run config's ``history_layout`` (the one the
    chat's window uses), else 10 and 5.
    """

    def __init__(
        self,
        *,
        store: Any,
        transport: Any,
        run_config: Callable[..., RunConfig],
        runs_dir: Path,
        chunk_turns: int | None = None,
        l2_chunks: int | None = None,
        max_concurrent: int = 1,
        first_backoff_s: float = 5.0,
        max_backoff_s: float = 300.0,
        events: Any = None,
        programs: Any = None,
        name_chats: bool = True,
    ) -> None:
        if min(chunk_turns or 1, l2_chunks or 1, max_concurrent) < 1:
            raise ValueError("chunk_turns, l2_chunks and max_concurrent must be >= 1")
        self.store = store
        self.transport = transport
        self.events = events  # the chats' event bus: a ``summary`` event per summary made
        self.programs = programs  # the program registry: which history version runs
        self._config = run_config
        self.runs_dir = Path(runs_dir)
        self.chunk_turns = chunk_turns
        self.l2_chunks = l2_chunks
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self._max_concurrent = max_concurrent
        self._slots: asyncio.Semaphore | None = None  # made on the loop, at first use
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()  # kicked while its worker was busy
        self._pending: dict[str, int] = {}  # chat -> spans due, as last read
        self._failing: dict[str, str] = {}  # chat -> its last failure
        self._aside: dict[str, set[tuple[int, int]]] = {}  # chat -> spans tried MAX_TRIES
        self._tries: dict[tuple[str, int, int], int] = {}  # (chat, level, first) -> failures
        self._last_error: str | None = None
        self._stopping = False
        # Offered each chat's config by the worker: names a chat after its first turn.
        self.namer = ChatNamer(
            store=store,
            transport=transport,
            runs_dir=self.runs_dir,
            events=events,
            enabled=name_chats,
        )

    # --- commands --------------------------------------------------------------------

    def kick(self, chat_id: str) -> None:
        """Make the chat's due summaries soon (after its turn was stored); never blocks.

        Call it on the event loop. A chat whose worker is busy or backing off is looked at
        again by that worker; nothing happens after :meth:`stop`.
        """
        if self._stopping:
            return
        task = self._workers.get(chat_id)
        if task is not None and not task.done():
            self._again.add(chat_id)
            return
        self._workers[chat_id] = asyncio.get_running_loop().create_task(self._work(chat_id))

    async def resume(self) -> int:
        """Kick every chat that has due spans (at a start); returns how many were kicked."""
        due = await asyncio.to_thread(self._due_chats)
        for chat_id, count in due.items():
            self._pending[chat_id] = count
            self.kick(chat_id)
        if due:
            log.info("jupyter-agent: summaries pending in %d chat(s), resumed", len(due))
        return len(due)

    async def stop(self) -> None:
        """Cancel every worker and wait for them (a cut run is made again at the next start)."""
        self._stopping = True
        await self.namer.stop()
        tasks = [t for t in self._workers.values() if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def idle(self) -> None:
        """Wait until no worker and no naming run is busy (tests and benchmarks): a
        worker may start a naming run, so both are waited for until neither is left."""
        while True:
            tasks = [t for t in self._workers.values() if not t.done()]
            if tasks:
                await asyncio.wait(tasks)
                continue
            if not self.namer.busy:
                return
            await self.namer.idle()

    # --- queries ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """``{"pending": spans due, "failing": chats failing, "last_error": str | None}``;
        a chat with a span set aside (tried MAX_TRIES times) counts as failing."""
        failing = len(set(self._failing) | {chat for chat, spans in self._aside.items() if spans})
        return {
            "pending": sum(self._pending.values()),
            "failing": failing,
            "last_error": self._last_error if failing else None,
        }

    # --- internals -------------------------------------------------------------------

    def _made(self, chunk: StoredChunk, run_id: str) -> None:
        """History made: the chat's ``summary`` event (the summary run's only one, so the
        bus keeps it with the ended runs' tail at once)."""
        if self.events is None:
            return
        self.events.publish(chunk.chat_id, run_id, SummaryEvent(chunk=chunk.to_json()))
        self.events.end_run(chunk.chat_id, run_id)

    def _layout(self, config: RunConfig) -> tuple[int, int]:
        """``(chunk_turns, l2_chunks)``: this scheduler's, else the run config's, else 10, 5."""
        layout = config.get("history_layout")
        layout = layout if isinstance(layout, dict) else {}
        turns = self.chunk_turns or int(layout.get("chunk_turns") or 10)
        chunks = self.l2_chunks or int(layout.get("l2_chunks") or 5)
        return turns, chunks

    def chat_config(self, chat_id: str) -> RunConfig:
        """The run config of a summary of ``chat_id``: its agent's and owner's (the
        default agent's when the chat is gone or the store predates agents). One read of
        the chat (blocking)."""
        chat = self.store.get_chat(chat_id)  # gone: its runs end at their next read
        if chat is None:
            return self._config(DEFAULT_AGENT, owner="")
        return self._config(chat.agent or DEFAULT_AGENT, owner=chat.owner)

    def _due(self, chat_id: str) -> tuple[RunConfig, list[ChunkSpan]]:
        """The chat's config and its due spans by that config's layout: one thread hop
        after each turn (blocking)."""
        config = self.chat_config(chat_id)
        chunk_turns, l2_chunks = self._layout(config)
        return config, self.store.pending_spans(chat_id, chunk_turns, l2_chunks)

    def _due_chats(self) -> dict[str, int]:
        due: dict[str, int] = {}
        chunk_turns, l2_chunks = self._layout(self._config(DEFAULT_AGENT, owner=""))
        for chat in self.store.list_chats():
            spans = self.store.pending_spans(chat.id, chunk_turns, l2_chunks)
            if spans:
                due[chat.id] = len(spans)
        return due

    def _tried(self, chat_id: str, span: ChunkSpan) -> int:
        key = (chat_id, span.level, span.first_turn)
        self._tries[key] = self._tries.get(key, 0) + 1
        return self._tries[key]

    def _fail(self, chat_id: str, span: ChunkSpan | None, error: str, wait_s: float) -> None:
        self._failing[chat_id] = error
        self._last_error = error
        where = f" turns {span.first_turn}-{span.last_turn} (level {span.level})" if span else ""
        log.warning(
            "jupyter-agent: summary of chat %s%s failed, retrying in %.0f s: %s",
            chat_id,
            where,
            wait_s,
            error,
        )

    async def _work(self, chat_id: str) -> None:
        """The chat's worker: make its due spans, oldest first, until none is due."""
        wait = self.first_backoff_s
        try:
            while not self._stopping:
                self._again.discard(chat_id)
                span: ChunkSpan | None = None
                error: str | None
                try:
                    # The config of this pass's run, if any, and what is due (read from
                    # disk: off the loop).
                    config, spans = await asyncio.to_thread(self._due, chat_id)
                    self.namer.offer(chat_id, config)  # named after its first turn?
                    self._pending[chat_id] = len(spans)
                    if not spans:
                        self._failing.pop(chat_id, None)
                        if chat_id in self._again:
                            continue
                        return
                    aside = self._aside.setdefault(chat_id, set())
                    spans = [sp for sp in spans if (sp.level, sp.first_turn) not in aside]
                    if not spans:
                        return  # only spans set aside: the next server start tries again
                    span = spans[0]
                    if not _has_tier(config):
                        # No run for this: a run per retry of a missing setting would fill
                        # the runs table; the next pass (or kick) looks again.
                        span, error = None, "no ready classify or codegen tier"
                    else:
                        error = await self._one(chat_id, span, config)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # the store, or a bug: retried like a provider
                    error = f"{type(err).__name__}: {err}"
                if error is None:
                    self._failing.pop(chat_id, None)
                    wait = self.first_backoff_s
                    continue
                if await asyncio.to_thread(self.store.get_chat, chat_id) is None:
                    self._failing.pop(chat_id, None)
                    self._pending.pop(chat_id, None)
                    self._aside.pop(chat_id, None)
                    return  # deleted meanwhile: nothing to summarise, nothing failed
                if span is not None and self._tried(chat_id, span) >= MAX_TRIES:
                    self._aside.setdefault(chat_id, set()).add((span.level, span.first_turn))
                    log.warning(
                        "jupyter-agent: summary of chat %s turns %d-%d set aside after %d "
                        "tries (the window shows the gap as omitted turns): %s",
                        chat_id, span.first_turn, span.last_turn, MAX_TRIES, error,
                    )  # fmt: skip
                    self._failing[chat_id] = error
                    self._last_error = error
                    continue
                self._fail(chat_id, span, error, wait)
                await asyncio.sleep(wait)
                wait = min(self.max_backoff_s, wait * 2)
        finally:
            current = asyncio.current_task()
            if self._workers.get(chat_id) is current:
                del self._workers[chat_id]
            if not self._pending.get(chat_id):
                self._pending.pop(chat_id, None)

    async def _one(self, chat_id: str, span: ChunkSpan, config: RunConfig) -> str | None:
        """Make one span's summary; None when it is stored, else the failure."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_concurrent)
        async with self._slots:
            # The job (its turns' text) is read once the slot is ours: after an upgrade
            # every chat is due at once, and reading all their jobs up front filled the
            # worker threads chat runs need and held every chat's text while waiting.
            job = await asyncio.to_thread(build_job, self.store, chat_id, span)
            run_id = new_id("run")
            run = await run_history(
                job=job,
                store=self.store,
                transport=self.transport,
                config=config,
                runs_dir=self.runs_dir,
                run_id=run_id,
                on_stored=lambda chunk: self._made(chunk, run_id),
                programs=self.programs,
            )
        if run.outcome.ok:
            log.debug(
                "summary of chat %s turns %d-%d: run %s",
                chat_id,
                span.first_turn,
                span.last_turn,
                run.summary.run_id,
            )
            return None
        return run.outcome.error or "the summary run failed"
