"""The driver: runs one turn's loop and performs every effect it asks for.

:class:`RunDriver` steps the run's program (the pure
:func:`~jupyter_agent.core.loop.machine.toolcaller` generator, or a deployed version: issue 16),
every value it yields checked by :mod:`~jupyter_agent.runtime.programs.guard` (a program
that fails ends its run visibly: :mod:`~jupyter_agent.runtime.programs.end`).
For each effect it writes the intent line to the run's log, performs the effect (model
call, cell, bash, mailbox drain, config, clock, id, reply, persistence, recall), then writes
the result line and sends the result back. ``config.get memory`` and ``recall.search``
(``toolcaller@v4``) are :mod:`jupyter_agent.runtime.memory.search`'s; a search that found
something is published as a ``recall`` event (the hits the model is shown). In-cell app
calls arrive from the kernel while a cell runs; the driver performs and logs them as
``app.call`` effects whose ``parent`` is the cell's seq (and the model calls they make as
nested effects under them).

A hard break cancels the effect in flight (a kernel interrupt for a cell) and answers it
``{"cancelled": "break_hard"}``; later effects that would reach outside are answered the
same way without being performed, so the loop ends at once with a minimal turn. A cell or
bash command cut that way also gets what it printed until then in that result (key
``cell``: a partial CellResult; ``bash``: a partial BashResult; see
:mod:`jupyter_agent.core.digest.cell_status`) and a ``cell_end`` event with status ``cancelled``.

While a cell or command runs, its outputs go out as ``cell_output`` events (throttled and
bounded by :class:`~jupyter_agent.runtime.kernels.live_output.LiveCell`); ``cell_end`` carries the
final outputs and a ``status`` (``ok``, ``error``, ``timed_out``, ``cancelled``). Live
output never changes a recorded result.

The run *closes* (takes no more mail, :attr:`RunDriver.closed`) at one atomic point: when
the final reply (``chat.post`` done true) is performed with no message in the mailbox, or
at a hard break. A final reply asked while messages wait is not posted: the driver drains
them into its answer ``{"deferred": [items]}`` and the loop takes them into this turn. A
hard break drains the mailbox at once and hands those items to the loop with the first
cancelled result (``deferred``), with the progress bubbles a cut cell had posted
(``bubbles``); a finished cell's bubbles ride on its ``cell.run`` result the same way.
So every message the run manager routed to this run while it was open is in its turn.

Notices (``RunManager.notify``) are handed only to a run whose drains ask for them
(``mailbox.drain {notices: true}``, ``toolcaller@v5``): from its first such drain on, its
deferrals and its hard break take them too; another run leaves them queued for the next
run, and they never defer a final reply. ``approval.wait`` is
:func:`~jupyter_agent.runtime.runs.approvals.perform_wait` (cancellable: a hard break cuts it).
``config.get mcp`` (``toolcaller@v6``) is the MCP hub's catalogue, kept for the run's
``mcp.*`` app calls with what the person approved (:mod:`~jupyter_agent.runtime.mcp.app`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from jupyter_agent.core.digest.record import (
    digest_options_from_config,
)
from jupyter_agent.core.events.types import (
    BubbleEvent,
    Delta,
    Event,
    RecallEvent,
    ReplyEvent,
    Retry,
    SteeringEvent,
)
from jupyter_agent.core.loop.inbox import NOTICE_PREFIX
from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM
from jupyter_agent.core.memory.recall import recall_tokens
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.effects import (
    APP_CALL,
    APPROVAL_WAIT,
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    CLOCK_NOW,
    CONFIG_GET,
    HTTP_POST,
    ID_NEW,
    MAILBOX_DRAIN,
    RECALL_SEARCH,
    TURN_APPEND,
    Effect,
    EffectGen,
    Result,
)
from jupyter_agent.exceptions import ProviderError
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from jupyter_agent.runtime.loop.cell_events import (
    RunningCell,
)
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.loop.tools import ToolRuns
from jupyter_agent.runtime.mcp.app import McpRunState, mcp_answer
from jupyter_agent.runtime.memory.hybrid import hybrid_rank
from jupyter_agent.runtime.memory.search import memory_answer, search
from jupyter_agent.runtime.programs.end import failed_turn
from jupyter_agent.runtime.programs.guard import (
    DEFAULT_STEP_TIMEOUT_S,
    ProgramFailed,
    ProgramGuard,
    drive_program,
    monotonic_elapsed,
)
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.approvals import perform_wait
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices, read_history
from jupyter_agent.runtime.runs.records import ended_by
from jupyter_agent.trace.log import EffectLog

__all__ = ["CANCELLABLE", "Outcome", "Performer", "RunConfig", "RunDriver", "RunServices"]

log = logging.getLogger(__name__)

Outcome = tuple[Any, "dict[str, Any] | None"]
"""What a performer answers: the result data, and an error (a JSON object) or None."""

Performer = Callable[[Effect, int], Awaitable[Outcome]]
"""Performs one effect (with its seq in the run's log)."""

# Effects a hard break cancels in flight, and answers as cancelled without performing after.
CANCELLABLE = frozenset({HTTP_POST, CELL_RUN, BASH_RUN, APP_CALL, CHAT_POST, APPROVAL_WAIT})


class RunDriver(ToolRuns):
    """Performs the effects of one run; see the module docstring."""

    def __init__(
        self,
        *,
        run_id: str,
        chat_id: str,
        log_: EffectLog,
        config: RunConfig,
        services: RunServices,
        cwd: str | None = None,
        program: RunProgram | None = None,
        program_name: str = PROGRAM,
        gen: EffectGen[TurnRecord] | None = None,
        summary: RunSummary | None = None,
        agent: str | None = None,
        step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    ) -> None:
        """``program``: the run's program (resolved at its opening; None: the built-in
        ``program_name``); ``gen`` replaces its generator (tests). ``agent``: the agent the
        run answers as (default ``config.agent``): the stored turn's ``fromAgent``.
        ``step_timeout_s``: a deployed program's step deadline."""
        self.run_id = run_id
        self.chat_id = chat_id
        self.log = log_
        self.config = config
        self.services = services
        self.program = program or RunProgram.of_builtin(program_name)
        self.agent = agent or config.agent
        self.step_timeout_s = step_timeout_s
        self._gen = gen if gen is not None else self.program.factory(run_id, chat_id)
        self._hard = False
        self._inflight: asyncio.Task[tuple[Any, dict[str, Any] | None]] | None = None
        self._inflight_name: str | None = None
        self.kernel = RunKernel(services.pool, root_dir=services.root_dir, cwd=cwd)
        self._running: RunningCell | None = None
        # Exactly the loop's options, from the config values the loop reads: the digest in
        # cell_end (and in the recorded result) is the one the model reads.
        self._digest_options = digest_options_from_config(config.get)
        self._tool_runs = 0  # cells and commands so far: a command's id is c<n>, as the loop's
        self._opened = False  # the first message taken is the run's opening one
        #: The view of the newest message taken that has one (``notebook.read()``'s default).
        self.view: dict[str, Any] | None = None
        self.turn_written = False  # the run manager writes the turn again if this stays False
        self.summary = summary
        #: Whose run it is (its chat's owner): its memories, recall and proposals are theirs.
        self.owner = summary.owner if summary is not None else ""
        self.ended: RunSummary | None = None
        self.stored_turn: TurnRecord | None = None  # the turn stored with self.ended
        """The run's end summary, once stored with its turn (one write: see turn.append)."""
        self.closed = False  # see the module docstring
        self._performers = self._table()
        self._deferred: list[dict[str, Any]] = []  # mail taken at a hard break
        self._taken: list[dict[str, Any]] = []  # the messages taken from the mailbox
        self._bubbles: list[str] = []  # in-cell bubbles of the cell in flight
        self._notices = False  # the program's drains take notices (see the module docstring)
        #: The run's MCP catalogue (its config.get mcp answer) and the person's approvals.
        self.mcp = McpRunState()

    # --- control -----------------------------------------------------------------------

    @property
    def breaking(self) -> bool:
        """True once a hard break was asked for."""
        return self._hard

    def request_hard_break(self) -> None:
        """Mark the run hard-broken and close it (the synchronous part of :meth:`hard_break`).

        Nothing in flight is cancelled here: the next effect that reaches outside is answered
        as cancelled, so the loop ends with ``break_hard``.
        """
        self._hard = True
        if not self.closed:
            # Atomically with the break (no await before this): what waits in the mailbox
            # was routed to this run, so it joins this turn; later mail starts the next run.
            self.closed = True
            self._deferred = self._take(self._drain_mail())

    def _drain_mail(self) -> list[dict[str, Any]]:
        """Take the chat's mailbox (its notices only for a run that takes them)."""
        items = self.services.mailbox.drain(self.chat_id, notices=self._notices)
        return self.services.scrubber.clean_json(items)  # the turn holds them as recorded

    def held_by(self, turn: TurnRecord) -> tuple[list[str], list[dict[str, Any]]]:
        """The messages this run took, split by what ``turn`` holds: (ids of those it holds
        as its text or steering, the items it does not hold, oldest first).

        Matched by text, one turn entry per message, so a path that kept only some of them
        (a run that failed, a bad tier, mail a hard break took after the loop's last read)
        never has the durable mailbox forget a message no turn holds.
        """
        texts: list[str] = [turn.user_text, *(s.text for s in turn.steering)]
        held: list[str] = []
        left: list[dict[str, Any]] = []
        for item in self._taken:
            text = str(item.get("text") or "")
            if item.get("kind") == "notice":
                text = NOTICE_PREFIX + text
            if text in texts:
                texts.remove(text)
                held.append(str(item["id"]))
            else:
                left.append(item)
        return held, left

    def take_deferred(self) -> list[dict[str, Any]]:
        """Mail a hard break took that the loop never read (for the next run); emptied."""
        items, self._deferred = self._deferred, []
        return items

    async def hard_break(self) -> None:
        """Cancel what is in flight now; the loop then ends with ``break_hard``."""
        self.request_hard_break()
        task = self._inflight
        if task is not None and not task.done():
            kernel = self.kernel.current
            in_kernel = self._inflight_name in (CELL_RUN, BASH_RUN) and kernel is not None
            task.cancel()  # at once; the kernel interrupt must not delay the break
            if in_kernel:
                try:
                    await asyncio.wait_for(kernel.interrupt(), 5)
                except Exception:  # the cell is cancelled either way; the kernel is discarded
                    log.debug("kernel interrupt failed during a hard break", exc_info=True)

    # --- the run -----------------------------------------------------------------------

    async def run(self) -> TurnRecord:
        """Run the program to its end; returns the turn stored (the loop's, with the run's
        ``programs`` and ``fromAgent``), or the turn of a failed program
        (:func:`~jupyter_agent.runtime.programs.end.failed_turn`: the manager stores it).

        The run takes its kernel at its first cell or command (a chat-only turn takes none).
        """
        guard = ProgramGuard(self.program.text, self.config.ceilings, elapsed=monotonic_elapsed())
        try:
            try:
                turn = await drive_program(
                    self._gen,
                    self._perform,
                    guard,
                    threaded=not self.program.builtin,
                    step_timeout_s=self.step_timeout_s,
                )
            except ProgramFailed as failed:  # the server is fine: the run ends, visibly
                return await failed_turn(self, failed)
            return self.stored_turn or turn
        finally:
            # However the loop ended, the run takes no more mail from here (synchronously,
            # before the awaits below): later messages are answered with the next run.
            self.closed = True
            try:
                await asyncio.to_thread(self.log.close)
            finally:
                await self.kernel.release()

    async def log_intent(self, effect: Effect) -> int:
        """Write the intent (the OS has it before the effect starts); when the log's sync
        policy wants it on disk first (an outside effect under ``effect``, the turn's
        store under both), fdatasync in a worker thread, never on the event loop."""
        seq = self.log.intent(effect, durable=False)
        if self.log.sync_before(effect.name):
            await asyncio.to_thread(self.log.sync)
        return seq

    async def _perform(self, effect: Effect) -> Result:
        seq = await self.log_intent(effect)
        if self._hard and effect.name in CANCELLABLE:
            return self.log.result(seq, effect.name, self._cancelled(effect.name, seq))
        if effect.name not in CANCELLABLE:
            # In-process effects (config, clock, ids, mailbox, the store): nothing to cancel,
            # so no task and no trip through the event loop.
            data, error = await self._do(effect, seq)
            return self.log.result(seq, effect.name, data, error=error)
        task = asyncio.ensure_future(self._do(effect, seq))
        self._inflight, self._inflight_name = task, effect.name
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._inflight = self._inflight_name = None
        if task.cancelled():
            return self.log.result(seq, effect.name, self._cancelled(effect.name, seq))
        data, error = task.result()
        return self.log.result(seq, effect.name, data, error=error)

    def _cancelled(self, name: str, seq: int) -> dict[str, Any]:
        """The result of an effect a hard break cut (see the module docstring).

        Keys are only ever added to ``{"cancelled": "break_hard"}`` (the loop tests that):
        a cut cell's partial result (``cell`` / ``bash``) and ``bubbles``, and the mail the
        break took (``deferred``).
        """
        data: dict[str, Any] = {"cancelled": "break_hard"}
        running, self._running = self._running, None
        if running is not None and running.seq == seq:
            key, partial, end = running.partial()
            data[key] = partial
            self._publish(end)
        if self._deferred:
            data["deferred"], self._deferred = self._deferred, []
        if name == CELL_RUN and self._bubbles:
            data["bubbles"], self._bubbles = list(self._bubbles), []
        return data

    async def _do(self, effect: Effect, seq: int) -> tuple[Any, dict[str, Any] | None]:
        """Perform one effect through its performer; returns (result data, error or None),
        scrubbed: what is recorded and what the loop reads hold no known secret."""
        performer = self._performers.get(effect.name)
        if performer is None:
            return None, {"type": "UnknownEffect", "message": f"no performer for {effect.name}"}
        try:
            outcome = await performer(effect, seq)
        except ProviderError as err:
            outcome = None, err.to_json()
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:  # reported to the loop as a failed effect, never a crash
            log.warning("effect %s (seq %d) failed: %s", effect.name, seq, type(err).__name__)
            outcome = None, {"type": type(err).__name__, "message": str(err)}
        return self.services.scrubber.clean_json(outcome)

    def _table(self) -> dict[str, Performer]:
        """Which performer answers which effect of the catalogue."""

        async def config_get(effect: Effect, seq: int) -> Outcome:
            if effect.data.get("key") == "history":
                budget, layout = effect.data.get("budget_tokens"), self.config.history_layout
                return await read_history(self.services.store, self.chat_id, budget, layout), None
            if effect.data.get("key") == "memory":
                answer = await memory_answer(
                    self.services.store, self.config.recall, owner=self.owner
                )
                return answer, None
            if effect.data.get("key") == "mcp":  # recorded: this run's calls use it
                answer = await mcp_answer(self.services.mcp)
                self.mcp.catalogue = McpCatalogue.from_json(answer)
                return answer, None
            return self.config.get(str(effect.data.get("key"))), None

        async def clock_now(effect: Effect, seq: int) -> Outcome:
            return now_iso(), None

        async def id_new(effect: Effect, seq: int) -> Outcome:
            return new_id(str(effect.data.get("kind") or "id")), None

        async def mailbox_drain(effect: Effect, seq: int) -> Outcome:
            self._notices = self._notices or effect.data.get("notices") is True
            items = self._deferred + self._take(self._drain_mail())
            self._deferred = []
            if self._hard:  # broken between effects: the loop ends here, holding the mail
                items.append({"kind": "break", "hard": True, "at": now_iso()})
            return items, None

        async def http_post(effect: Effect, seq: int) -> Outcome:
            return await self._http_post(effect, live=effect.parent is None)

        async def cell_run(effect: Effect, seq: int) -> Outcome:
            self.mcp.tool_started(seq, cell=True)
            return await self._cell_run(effect.data, seq), None

        async def bash_run(effect: Effect, seq: int) -> Outcome:
            self.mcp.tool_started(seq, cell=False)
            return await self._bash_run(effect.data, seq), None

        async def chat_post(effect: Effect, seq: int) -> Outcome:
            return self._chat_post(effect.data), None

        async def turn_append(effect: Effect, seq: int) -> Outcome:
            # Stored with what the host knows (the hashed refs, the agent); the intent stays
            # as the loop yielded it, so a replay compares like for like.
            turn = replace(
                TurnRecord.from_json(self.services.scrubber.clean_json(effect.data)),
                programs=self.program.programs,
                from_agent=self.agent,
            )
            delivered, _left = self.held_by(turn)
            # The run's end is stored with its turn: one transaction (and one sync) per
            # end instead of three.
            ended = ended_by(self.summary, turn, now_iso()) if self.summary else None
            await asyncio.to_thread(
                self.services.store.append_turn, turn, delivered=delivered, ended=ended
            )
            self.turn_written = True
            self.ended = ended
            self.stored_turn = turn
            return {"ok": True}, None

        async def recall_search(effect: Effect, seq: int) -> Outcome:
            rank = hybrid_rank(self.services.embedder, self.owner)  # None: lexical
            timeout_s = self.config.recall_timeout_ms / 1000
            hits = await search(
                self.services.store,
                effect.data,
                owner=self.owner,
                rank=rank,
                known=self.services.scrubber.spans,
                timeout_s=timeout_s,
            )
            if hits:  # what the model is shown, as it is shown, before its first call
                shown = tuple(h.to_json() for h in hits)
                tokens = recall_tokens(hits, self.chat_id)
                self._publish(RecallEvent(hits=shown, tokens=tokens, program=AUTORECALL_PROGRAM))
            return {"hits": [h.to_json() for h in hits]}, None

        async def approval_wait(effect: Effect, seq: int) -> Outcome:
            waits = self.services.approvals
            answer = await perform_wait(waits, self.run_id, effect.data, self._publish)
            if effect.parent is None:  # the loop's: an approved cell's MCP calls do not wait
                self.mcp.saw_wait(effect.data, answer)
            return answer, None

        return {
            CONFIG_GET: config_get,
            CLOCK_NOW: clock_now,
            ID_NEW: id_new,
            MAILBOX_DRAIN: mailbox_drain,
            HTTP_POST: http_post,
            CELL_RUN: cell_run,
            BASH_RUN: bash_run,
            CHAT_POST: chat_post,
            TURN_APPEND: turn_append,
            RECALL_SEARCH: recall_search,
            APPROVAL_WAIT: approval_wait,
        }

    # --- performers --------------------------------------------------------------------

    def _publish(self, event: Event) -> None:
        self.services.events.publish(self.chat_id, self.run_id, event)

    def _take(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Items just taken from the mailbox: each message after the opening one is steering
        (published as it joins the turn)."""
        for item in items:
            if item.get("kind") == "notice" and isinstance(item.get("id"), str):
                self._taken.append(item)  # held by the turn's steering (v5), then forgotten
            if item.get("kind") != "message":
                continue
            if isinstance(item.get("view"), dict):
                self.view = item["view"]
            if isinstance(item.get("id"), str):
                self._taken.append(item)
            if not self._opened:
                self._opened = True
                continue
            message_id = item.get("id")
            self._publish(
                SteeringEvent(
                    message_id=message_id if isinstance(message_id, str) else None,
                    text=str(item.get("text") or ""),
                    at=str(item.get("at") or ""),
                )
            )
        return items

    async def _http_post(self, effect: Effect, *, live: bool) -> tuple[Any, dict[str, Any] | None]:
        """One model call through the shared performer; deltas go live for the loop's calls."""
        deadline = float(self.config.ceilings.get("model_deadline_s") or 0)
        if deadline > 0 and float(effect.data.get("deadline_s") or 0) > deadline:
            # The configured deadline caps the adapter's default; the intent stays as recorded.
            effect = replace(effect, data={**effect.data, "deadline_s": deadline})
        return await perform(
            effect,
            config={},
            transport=self.services.transport,
            on_delta=(lambda text: self._publish(Delta(text=text))) if live else None,
            on_retry=lambda info: self._publish(
                Retry(attempt=info.attempt, status=info.status, wait_s=info.wait_s)
            ),
        )

    def _chat_post(self, data: dict[str, Any]) -> Any:
        done = bool(data.get("done"))
        if done and not self.closed:
            mailbox = self.services.mailbox
            if mailbox.first_message(self.chat_id) is not None:
                # Routed here after the last drain: the turn must hold them, so the final
                # reply waits and the loop reads them (no await between check and drain).
                return {"deferred": self._take(self._drain_mail())}
            self.closed = True
        message_id = new_id("msg")
        text = str(data.get("text", ""))
        kind = ReplyEvent if done else BubbleEvent
        self._publish(kind(text=text, done=done, message_id=message_id))
        return message_id

    # --- nested effects (app calls and the model calls they make) ----------------------

    async def perform_nested(self, effect: Effect) -> Result:
        """Log and perform an effect made on behalf of a cell (its ``parent`` is set).

        Not tracked as the effect in flight: cancelling the cell cancels it with the cell.
        """
        seq = await self.log_intent(effect)
        if self._hard:
            return self.log.result(seq, effect.name, {"cancelled": "break_hard"})
        data, error = await self._do(effect, seq)
        return self.log.result(seq, effect.name, data, error=error)

    def post_bubble(self, text: str) -> str:
        """Show a progress bubble for an in-cell ``chat.post``; returns its message id.

        The text also joins the turn's replies, through the cell's result.
        """
        self._bubbles.append(text)
        return str(self._chat_post({"text": text, "done": False}))
