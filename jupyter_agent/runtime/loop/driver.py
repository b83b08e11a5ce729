"""The driver: runs one turn's loop and performs every effect it asks for.

:class:`RunDriver` steps the run's program (the pure
:func:`~jupyter_agent.core.loop.machine.toolcaller` generator, or a deployed version),
every value it yields checked by :mod:`~jupyter_agent.runtime.programs.guard` (a program
that fails ends its run visibly: :mod:`~jupyter_agent.runtime.programs.end`). It is made
of parts, one per responsibility:

- :class:`~.effects.EffectRunner`: each effect's intent line, its performer, its result
  line; nested effects (in-cell app calls and the model calls they make, logged as
  ``app.call`` effects whose ``parent`` is the cell's seq); the hard break's cut;
- :class:`~.run_inbox.RunInbox`: the mail the run takes, the final reply that waits for
  mail, the run's closing, which messages its turn holds;
- the performers, registered per group (:mod:`.performers`), the cells and commands among
  them run by :class:`~.tools.CellRunner`;
- the run's phase (:class:`~.phase.RunLifecycle`), shared with the run manager.

A hard break (:meth:`RunDriver.hard_break`) cancels the effect in flight (a kernel
interrupt for a cell) and answers it ``{"cancelled": "break_hard"}``; later effects that
would reach outside are answered the same way without being performed, so the loop ends
at once with a minimal turn. Keys are only ever added to that answer: a cut cell's partial
result (``cell``: a partial CellResult; ``bash``: a partial BashResult; see
:mod:`jupyter_agent.core.digest.cell_status`) with a ``cell_end`` event of status
``cancelled``, the progress bubbles a cut cell had posted (``bubbles``), and the mail the
break took (``deferred``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jupyter_agent.core.digest.record import digest_options_from_config
from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.effects import BASH_RUN, CELL_RUN, Effect, EffectGen, Result
from jupyter_agent.runtime.environments.choice import run_interpreter
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from jupyter_agent.runtime.loop import performers as groups
from jupyter_agent.runtime.loop.app_table import IN_CELL_APPS
from jupyter_agent.runtime.loop.apphost import AppDriver, AppTable
from jupyter_agent.runtime.loop.context import RunContext, StoredTurn
from jupyter_agent.runtime.loop.effects import CANCELLABLE, EffectRunner, Outcome, Performer
from jupyter_agent.runtime.loop.phase import RunLifecycle
from jupyter_agent.runtime.loop.run_inbox import RunInbox
from jupyter_agent.runtime.loop.tools import CellRunner
from jupyter_agent.runtime.mcp.app import McpRunState
from jupyter_agent.runtime.programs.end import failed_turn
from jupyter_agent.runtime.programs.guard import (
    DEFAULT_STEP_TIMEOUT_S,
    ProgramFailed,
    ProgramGuard,
    drive_program,
    monotonic_elapsed,
)
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.mailbox import MailItem
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.trace.log import EffectLog

__all__ = ["CANCELLABLE", "Outcome", "Performer", "RunConfig", "RunDriver", "RunServices"]

log = logging.getLogger(__name__)


class RunDriver:
    """Performs the effects of one run; see the module docstring. It is the in-cell apps'
    host (:class:`~jupyter_agent.runtime.loop.apphost.AppDriver`) for its cells."""

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
        lifecycle: RunLifecycle | None = None,
        apps: AppTable = IN_CELL_APPS,
        overrides: Mapping[str, Callable[[RunDriver, Performer], Performer]] | None = None,
        channel: str | None = None,
        after_turn: Callable[[RunDriver], Awaitable[None]] | None = None,
    ) -> None:
        """``program``: the run's program (resolved at its opening; None: the built-in
        ``program_name``); ``gen`` replaces its generator (tests). ``agent``: the agent the
        run answers as (default ``config.agent``): the stored turn's ``fromAgent``.
        ``step_timeout_s``: a deployed program's step deadline. ``lifecycle``: the run's
        phase, when the run manager reserved it (it moves it to ``OPEN`` once launched);
        else a new open one.
        ``apps``: the in-cell apps its cells may call. ``overrides``: performers made for
        this driver (from it and its own performer) that replace its own by effect name
        (a rerun's recorded inputs: :mod:`.rerun`); ``channel``: where its events go
        (None: its chat's). ``after_turn``: awaited once the loop ended, before the run's
        kernel goes (not after a hard break): an eval's checks."""
        program = program or RunProgram.of_builtin(program_name)
        lifecycle = lifecycle or RunLifecycle(run_id)
        self.ctx = RunContext(
            run_id=run_id,
            chat_id=chat_id,
            agent=agent or config.agent,
            owner=summary.owner if summary is not None else "",
            config=config,
            services=services,
            program=program,
            summary=summary,
            lifecycle=lifecycle,
            channel=channel,
        )
        self.log = log_
        self.apps = apps
        self._after_turn = after_turn
        self.step_timeout_s = step_timeout_s
        self._gen = gen if gen is not None else program.factory(run_id, chat_id)
        self.kernel = RunKernel(
            services.pool, root_dir=services.root_dir, cwd=cwd, python=self._interpreter
        )
        self.inbox = RunInbox(
            chat_id=chat_id,
            mailbox=services.mailbox,
            lifecycle=lifecycle,
            scrubber=lambda: services.scrubber,
            publish=self.ctx.publish,
        )
        self.cells = CellRunner(
            kernel=self.kernel,
            publish=self.ctx.publish,
            # Exactly the loop's options, from the config values the loop reads: the digest
            # in cell_end (and in the recorded result) is the one the model reads.
            digest_options=digest_options_from_config(config.get),
            app_driver=self._as_app_driver,
        )
        performers = groups.table(
            groups.config_group(self.ctx),
            groups.mail_group(self.inbox),
            groups.model_group(self.ctx),
            groups.tool_group(self.ctx, self.cells),
            groups.turn_group(self.ctx, self.inbox),
            groups.recall_group(self.ctx),
            groups.approval_group(self.ctx),
        )
        for name, make in (overrides or {}).items():
            performers[name] = make(self, performers[name])
        self.effects = EffectRunner(
            log_,
            performers,
            lifecycle=lifecycle,
            scrubber=lambda: services.scrubber,
            cancelled=self._cancelled,
        )

    # --- the run as others see it (the run manager, the app host) ----------------------

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.ctx.run_id

    @property
    def chat_id(self) -> str:
        """The run's chat."""
        return self.ctx.chat_id

    @property
    def owner(self) -> str:
        """Whose run it is (its chat's owner): its memories, recall and proposals are theirs."""
        return self.ctx.owner

    @property
    def agent(self) -> str:
        """The agent the run answers as."""
        return self.ctx.agent

    @property
    def config(self) -> RunConfig:
        """The run's config snapshot."""
        return self.ctx.config

    @property
    def services(self) -> RunServices:
        """The long-lived services the run uses."""
        return self.ctx.services

    @property
    def program(self) -> RunProgram:
        """The program the run runs."""
        return self.ctx.program

    @property
    def lifecycle(self) -> RunLifecycle:
        """The run's phase."""
        return self.ctx.lifecycle

    @property
    def mcp(self) -> McpRunState:
        """The run's MCP catalogue and the person's approvals."""
        return self.ctx.mcp

    @mcp.setter
    def mcp(self, state: object) -> None:
        if isinstance(state, McpRunState):
            self.ctx.mcp = state

    @property
    def view(self) -> dict[str, Any] | None:
        """The view of the newest message the run took (``notebook.read()``'s default)."""
        return self.inbox.view

    async def _interpreter(self) -> str | None:
        """The interpreter of the run's kernel (``KernelPool.python``; None: the server's)."""
        setting = str(getattr(self.ctx.services.pool, "python", "") or "")
        if not setting:
            return None
        people = self.ctx.services.person_kernels
        view = self.view or {}
        return await run_interpreter(
            setting,
            kernel_specs=getattr(people, "kernel_specs", None),
            person_kernels=people,
            view_path=view.get("path") if isinstance(view.get("path"), str) else None,
            owner=self.owner,
        )

    @property
    def stored(self) -> StoredTurn | None:
        """The run's turn and end summary, once stored (``turn.append``)."""
        return self.ctx.stored

    @property
    def breaking(self) -> bool:
        """True once a hard break was asked for."""
        return self.ctx.lifecycle.breaking

    def _as_app_driver(self) -> AppDriver:
        return self

    # --- control -----------------------------------------------------------------------

    def request_hard_break(self) -> None:
        """Mark the run hard-broken and close it (the synchronous part of :meth:`hard_break`).

        Nothing in flight is cancelled here: the next effect that reaches outside is answered
        as cancelled, so the loop ends with ``break_hard``.
        """
        self.inbox.break_hard()

    async def hard_break(self) -> None:
        """Cancel what is in flight now; the loop then ends with ``break_hard``."""
        self.request_hard_break()
        kernel = self.kernel.current
        cut = self.effects.cut()  # at once; the kernel interrupt must not delay the break
        if cut in (CELL_RUN, BASH_RUN) and kernel is not None:
            try:
                await asyncio.wait_for(kernel.interrupt(), 5)
            except Exception:  # the cell is cancelled either way; the kernel is discarded
                log.debug("kernel interrupt failed during a hard break", exc_info=True)

    def held_by(self, turn: TurnRecord) -> tuple[list[str], list[MailItem]]:
        """See :meth:`RunInbox.held_by`."""
        return self.inbox.held_by(turn)

    def take_deferred(self) -> list[dict[str, Any]]:
        """Mail a hard break took that the loop never read (for the next run); emptied."""
        return self.inbox.pop_deferred()

    # --- the run -----------------------------------------------------------------------

    async def run(self) -> TurnRecord:
        """Run the program to its end; returns the turn stored (the loop's, with the run's
        ``programs`` and ``fromAgent``), or the turn of a failed program
        (:func:`~jupyter_agent.runtime.programs.end.failed_turn`: the manager stores it).

        The run takes its kernel at its first cell or command (a chat-only turn takes none).
        """
        run = self.ctx
        guard = ProgramGuard(run.program.text, run.config.ceilings, elapsed=monotonic_elapsed())
        try:
            try:
                turn = await drive_program(
                    self._gen,
                    self.effects.perform,
                    guard,
                    threaded=not run.program.builtin,
                    step_timeout_s=self.step_timeout_s,
                )
            except ProgramFailed as failed:  # the server is fine: the run ends, visibly
                self.inbox.close()  # takes no more mail: the next message starts a normal run
                return await failed_turn(
                    failed,
                    run_id=run.run_id,
                    chat_id=run.chat_id,
                    agent=run.agent,
                    program=run.program,
                    summary=run.summary,
                    log_=self.log,
                    publish=run.publish,
                    stored=run.stored.turn if run.stored else None,
                    clean=run.services.scrubber.clean_json,
                )
            return run.stored.turn if run.stored else turn
        finally:
            # However the loop ended, the run takes no more mail from here (synchronously,
            # before the awaits below): later messages are answered with the next run.
            self.inbox.close()
            try:
                await asyncio.to_thread(self.log.close)
                if self._after_turn is not None and not self.breaking:
                    await self._after_turn(self)
            finally:
                await self.kernel.release()

    async def log_intent(self, effect: Effect) -> int:
        """Write an effect's intent line; returns its seq (see :class:`EffectRunner`)."""
        return await self.effects.log_intent(effect)

    async def perform(self, effect: Effect) -> Result:
        """Log and perform one effect of the loop."""
        return await self.effects.perform(effect)

    async def perform_nested(self, effect: Effect) -> Result:
        """Log and perform an effect made on behalf of a cell (its ``parent`` is set).

        Not tracked as the effect in flight: cancelling the cell cancels it with the cell.
        """
        return await self.effects.perform_nested(effect)

    def post_bubble(self, text: str) -> str:
        """Show a progress bubble for an in-cell ``chat.post``; returns its message id.

        The text also joins the turn's replies, through the cell's result.
        """
        self.cells.bubbles.append(text)
        return str(self.inbox.post({"text": text, "done": False}))

    def _cancelled(self, name: str, seq: int) -> dict[str, Any]:
        """The result of an effect a hard break cut (see the module docstring)."""
        data: dict[str, Any] = {"cancelled": "break_hard"}
        cut = self.cells.cut(seq)
        if cut is not None:
            data[cut[0]] = cut[1]
        deferred = self.inbox.pop_deferred()
        if deferred:
            data["deferred"] = deferred
        if name == CELL_RUN and self.cells.bubbles:
            data["bubbles"] = self.cells.take_bubbles()
        return data
