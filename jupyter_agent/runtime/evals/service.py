"""Evals: a suite's cases run as runs of their own, checked, tallied and reported.

``POST agent/evals`` (and ``jupyter agent eval``) starts an eval: each case of the suite
(:mod:`.suite`), and each recorded run given (re-run with its original's final reply as
the reference), runs once per model and per repeat, as a run fed its message
(:func:`~jupyter_agent.runtime.loop.rerun.start_fed_run`): live against the model, in a
fresh agent kernel, with nothing of the person's (no history, no recall, no memory
written, no proposal, no person's kernel, any approval refused), never a turn of a chat.
Its ``chat_id`` is the eval's id, so ``GET agent/runs`` lists the cases' runs under it
and ``trace show`` reads each. Once a case's turn is stored its checks run in the same
kernel (``reply`` bound to the final reply), then the kernel goes.

At most ``concurrency`` cases run at once (the pool's kernels: a case takes one). When
every case has ended, the report notebook (:mod:`.report`) is written into the trace
folder and the eval is ``done``; ``GET agent/evals/{id}`` answers its state at any time.
Evals are kept in memory (the newest :data:`KEPT` per server); their runs and report
are on disk. A hard break of a case's run (``POST agent/runs/{id}/break``) ends that case
(``error``); the server's stop breaks every case.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.exceptions import BadRequest, NotFound, RunCancelled, TooManyRequests
from jupyter_agent.runtime.evals.checks import run_checks
from jupyter_agent.runtime.evals.outcome import CaseOutcome, tally
from jupyter_agent.runtime.evals.report import report_notebook, report_stem
from jupyter_agent.runtime.evals.suite import MAX_CASES, Case, read_suite
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.driver import RunDriver
from jupyter_agent.runtime.loop.rerun import FedRun, RecordedInputs, start_fed_run
from jupyter_agent.runtime.notebook.exports import NotebookWriter
from jupyter_agent.runtime.programs.resolve import RunProgram, resolve_run_program
from jupyter_agent.runtime.runs.run_service import RunService
from jupyter_agent.trace.cells_view import build_view
from jupyter_agent.trace.log import TraceFile

__all__ = ["KEPT", "MAX_GOING", "MAX_RUNS", "EvalService"]

log = logging.getLogger(__name__)

#: The most runs one eval makes (cases x models x repeats).
MAX_RUNS: Final = 2000
#: How many evals a server keeps (oldest forgotten first; their files stay).
KEPT: Final = 50
#: The most evals one owner has going at once.
MAX_GOING: Final = 2
_DEFAULT_AGENT: Final = "agent"


@dataclass
class _Rerun:
    """A recorded run given as a case: re-run with its final reply as the reference."""

    name: str
    original: RunSummary
    trace: TraceFile
    reference: str


@dataclass
class _Eval:
    eval_id: str
    owner: str
    suite: str | None
    program: str
    models: list[str | None]
    repeats: int
    concurrency: int
    started: str
    outcomes: list[CaseOutcome] = field(default_factory=list)
    status: str = "running"
    ended: str | None = None
    report: str | None = None
    error: str | None = None
    task: asyncio.Task[None] | None = None

    def to_json(self) -> dict[str, Any]:
        done = [o for o in self.outcomes if o.status in ("passed", "failed", "error")]
        return {
            "eval_id": self.eval_id,
            "status": self.status,
            "suite": self.suite,
            "program": self.program,
            "models": self.models,
            "repeats": self.repeats,
            "concurrency": self.concurrency,
            "started": self.started,
            "ended": self.ended,
            "total": len(self.outcomes),
            "finished": len(done),
            "passed": sum(1 for o in done if o.status == "passed"),
            "by_model": tally(done),
            "report": self.report,
            "error": self.error,
            "results": [o.to_json() for o in self.outcomes],
        }


class EvalService:
    """The evals of one server (see the module docstring)."""

    def __init__(self, *, runs: RunService, notebooks: NotebookWriter, root_dir: str) -> None:
        self._runs = runs
        self._notebooks = notebooks
        self._root_dir = root_dir
        self._evals: OrderedDict[str, _Eval] = OrderedDict()

    async def start(
        self,
        *,
        owner: str,
        suite: str | None = None,
        runs: Sequence[str] = (),
        models: Sequence[str | None] = (None,),
        program: str | None = None,
        repeats: int = 1,
        concurrency: int = 4,
    ) -> dict[str, Any]:
        """``POST agent/evals``: start an eval; its state (``running``). Refused with
        nothing started: ``bad_suite`` (no suite and no run, an unreadable suite, no
        case), ``bad_model``, ``bad_program``, ``bad_eval`` (repeats, concurrency, too many
        runs); ``NotFound`` / ``Conflict`` for a run given that is not an ended run of
        ``owner``; ``TooManyRequests`` (``too_many_evals``) while :data:`MAX_GOING` of
        ``owner``'s evals are going."""
        configs = self._runs.run_configs
        if configs is None:
            raise BadRequest("evals are not available on this server", reason="bad_eval")
        if not 1 <= repeats <= 20:
            raise BadRequest(f"repeats is 1..20, got {repeats}", reason="bad_eval")
        if not 1 <= concurrency <= 16:
            raise BadRequest(f"concurrency is 1..16, got {concurrency}", reason="bad_eval")
        models = list(models) or [None]
        if len(models) > 8 or len(set(models)) != len(models):
            raise BadRequest("models: at most 8, each once", reason="bad_eval")
        if len(runs) > MAX_CASES:
            raise BadRequest(f"{len(runs)} runs: at most {MAX_CASES}", reason="bad_eval")
        cases = await asyncio.to_thread(read_suite, suite, self._root_dir) if suite else []
        reruns = [await self._rerun(run_id, owner) for run_id in runs]
        if not cases and not reruns:
            raise BadRequest("an eval needs a suite or runs to re-run", reason="bad_suite")
        total = (len(cases) + len(reruns)) * len(models) * repeats
        if total > MAX_RUNS:
            raise BadRequest(f"{total} runs: an eval makes at most {MAX_RUNS}", reason="bad_eval")
        for model in models:
            if model is not None:
                problem = await asyncio.to_thread(
                    configs.model_problem, model, agent=_DEFAULT_AGENT, owner=owner
                )
                if problem:
                    raise BadRequest(problem, reason="bad_model")
        chosen = await self._program(program)
        # Checked with no await before it is kept: two requests never both pass the last slot.
        going = sum(1 for e in self._evals.values() if e.owner == owner and e.status == "running")
        if going >= MAX_GOING:
            raise TooManyRequests(
                f"{going} evals of yours are going: start another once one is done",
                retry_after_s=10.0,
                reason="too_many_evals",
            )
        state = _Eval(
            eval_id=new_id("eval"),
            owner=owner,
            suite=suite,
            program=chosen.ref.key,
            models=models,
            repeats=repeats,
            concurrency=concurrency,
            started=now_iso(),
        )
        work: list[tuple[CaseOutcome, Case | _Rerun]] = []
        for model in models:
            for repeat in range(1, repeats + 1):
                items: list[Case | _Rerun] = [*cases, *reruns]
                for item in items:
                    outcome = CaseOutcome(case=item.name, model=model, repeat=repeat)
                    if isinstance(item, _Rerun):
                        outcome.reference = item.reference
                    work.append((outcome, item))
        state.outcomes = [o for o, _ in work]
        self._keep(state)
        state.task = asyncio.get_running_loop().create_task(self._run(state, work, chosen))
        return state.to_json()

    async def get(self, eval_id: str, *, owner: str) -> dict[str, Any]:
        """``GET agent/evals/{id}``: the eval's state; ``NotFound`` for an unknown one (or
        another owner's, or one forgotten)."""
        state = self._evals.get(eval_id)
        if state is None or state.owner != owner:
            raise NotFound(f"no eval {eval_id[:80]!r}")
        return state.to_json()

    async def wait(self, eval_id: str) -> None:
        """Return once the eval has ended (at once for an unknown one)."""
        state = self._evals.get(eval_id)
        if state is not None and state.task is not None:
            await asyncio.shield(state.task)

    async def stop(self) -> None:
        """The server stops: every eval still going is cancelled (its runs are broken by
        the reruns' stop)."""
        tasks = [s.task for s in self._evals.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    # --- inside ------------------------------------------------------------------------

    def _keep(self, state: _Eval) -> None:
        self._evals[state.eval_id] = state
        ended = [k for k, e in self._evals.items() if e.status != "running"]
        for eval_id in ended[: max(0, len(self._evals) - KEPT)]:  # the oldest ended first
            del self._evals[eval_id]

    async def _rerun(self, run_id: str, owner: str) -> _Rerun:
        original, trace = await self._runs.ended_run(run_id, owner=owner)
        turn = (await asyncio.to_thread(build_view, trace)).turn
        reference = turn.replies[-1].text if turn is not None and turn.replies else ""
        inputs = await asyncio.to_thread(RecordedInputs.of, trace)
        if not inputs.opened:
            raise BadRequest(f"run {run_id} took no message: nothing to re-run", reason="bad_run")
        name = f"rerun of {run_id}"
        return _Rerun(name=name, original=original, trace=trace, reference=reference)

    async def _program(self, key: str | None) -> RunProgram:
        if key:
            return await self._runs.program(key)
        services = self._runs.manager.services
        return await resolve_run_program(services.programs, _DEFAULT_AGENT, "toolcaller")

    async def _run(
        self, state: _Eval, work: list[tuple[CaseOutcome, Case | _Rerun]], program: RunProgram
    ) -> None:
        gate = asyncio.Semaphore(state.concurrency)

        async def one(outcome: CaseOutcome, item: Case | _Rerun) -> None:
            async with gate:
                try:
                    await self._case(state, outcome, item, program)
                except Exception as exc:  # this case is an error; the others go on
                    log.exception("eval %s: case %s failed", state.eval_id, outcome.case)
                    outcome.status, outcome.message = "error", f"the case failed: {exc}"

        try:
            await asyncio.gather(*(one(o, item) for o, item in work))
        except (Exception, RunCancelled, asyncio.CancelledError) as exc:
            state.error = str(exc) or type(exc).__name__
            for outcome in state.outcomes:
                if outcome.status in ("pending", "running"):
                    outcome.status, outcome.message = "error", "the eval was stopped"
            if isinstance(exc, asyncio.CancelledError):
                state.status, state.ended = "done", now_iso()
                raise
        try:
            state.report = await self._report(state)
        except Exception as exc:
            log.exception("eval %s: no report", state.eval_id)
            state.error = state.error or f"the report could not be written: {exc}"
        finally:
            state.status = "done"
            state.ended = now_iso()

    async def _case(
        self, state: _Eval, outcome: CaseOutcome, item: Case | _Rerun, program: RunProgram
    ) -> None:
        configs, manager = self._runs.run_configs, self._runs.manager
        checks = item.checks if isinstance(item, Case) and item.checks.strip() else ""
        run_id = new_id("run")
        outcome.run_id, outcome.status = run_id, "running"
        started = time.monotonic()

        async def after_turn(driver: RunDriver) -> None:
            await run_checks(driver, checks, outcome)

        try:
            agent = item.original.agent if isinstance(item, _Rerun) else _DEFAULT_AGENT
            # The owner's settings may be store reads: off the server's loop.
            config = await asyncio.to_thread(
                configs.run_config, agent, owner=state.owner, model=outcome.model
            )
            if isinstance(item, _Rerun):
                inputs = await asyncio.to_thread(RecordedInputs.of, item.trace)
            else:
                inputs = RecordedInputs.message(item.message, view=item.view, cwd=item.folder)
            _summary, task = await start_fed_run(
                FedRun(run_id=run_id, chat_id=state.eval_id, owner=state.owner),
                inputs=inputs,
                config=config,
                program=program,
                services=manager.services,
                log_path=manager.log_path(run_id),
                going=self._runs.reruns,
                rerun_of=item.original.run_id if isinstance(item, _Rerun) else None,
                after_turn=after_turn,
                capped=False,  # bounded by the eval's concurrency, not the owner's reruns
            )
            turn = await asyncio.shield(task)  # a stopped eval leaves its runs to their stop
        except (Exception, RunCancelled) as exc:
            outcome.status, outcome.message = "error", f"the case's run did not run: {exc}"
            return
        outcome.ended(turn, time.monotonic() - started, has_checks=bool(checks))

    async def _report(self, state: _Eval) -> str:
        nb = await asyncio.to_thread(report_notebook, state.to_json())
        stem = report_stem(state.suite, state.eval_id)
        path, _created = await self._notebooks.write_new(stem, nb)
        return path
