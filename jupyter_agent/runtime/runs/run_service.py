"""The runs service: runs and their traces, breaks and approvals, with typed arguments.

:class:`RunService` answers the run routes of the agent API (``GET agent/runs``, a run's
detail, raw log, stats and notebook, ``POST agent/break/{id}``, ``POST
agent/runs/{id}/approvals/{approval_id}``) and the MCP tools that read runs. Contracts (as
every service's of the runtime):

- Arguments are typed values the handlers parsed; no method sees a request body, a query
  string or an HTTP status.
- A refusal is a :class:`~jupyter_agent.exceptions.RequestError` (``BadRequest``,
  ``NotFound``, ...); a locked or unreachable database is ``StoreUnavailable``. Every
  method checks its whole input before writing anything.
- Answers are JSON-ready dicts (the REST bodies).
- Owners: every method takes a required keyword ``owner`` (the request's). Another owner's
  run is ``NotFound`` with the message of a missing one; ``admin=True`` (an admin, for
  support) reads any run, nothing more; ``list(owner=ALL_OWNERS)`` lists every owner's.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.exceptions import BadRequest, Conflict, NotFound, ProgramFault
from jupyter_agent.programs.builtin import BUILTIN
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.runtime.loop.fed_runs import Reruns
from jupyter_agent.runtime.loop.live_detail import overlay_live
from jupyter_agent.runtime.loop.rerun import CHANNEL, start_rerun
from jupyter_agent.runtime.notebook.contents import shown
from jupyter_agent.runtime.notebook.exports import NotebookWriter, trace_stem
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.approvals import ApprovalWaits
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber
from jupyter_agent.store.repo import Store
from jupyter_agent.trace.log import TraceFile, read_log

__all__ = ["ALL_OWNERS", "MAX_CHAT_RUNS", "RunService", "is_run_id", "no_run"]

#: ``list(owner=ALL_OWNERS)``: every owner's runs (the handler lets only admins).
ALL_OWNERS = "*"
#: The most runs :meth:`RunService.of_chat` answers.
MAX_CHAT_RUNS = 1000
_RUN_ID = re.compile(r"^run_[0-9A-Za-z]{1,64}\Z")  # \Z: "run_x\n" is no run id


def is_run_id(text: str) -> bool:
    """True when ``text`` has the shape of a run id (``run_`` and 1 to 64 letters/digits)."""
    return _RUN_ID.match(text) is not None


def _no_program(key: str) -> RunProgram:
    raise BadRequest(f"no program {key} on this server", reason="bad_program")


def no_run(run_id: str) -> NotFound:
    """The refusal of an unknown run (or another owner's: the same message)."""
    return NotFound(f"no run {shown(run_id)}")


class RunService:
    """Runs and traces of one server's agent (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        manager: RunManager,
        notebooks: NotebookWriter,
        approvals: ApprovalWaits,
        scrubber: Scrubber = NO_SECRETS,
        events: EventBus | None = None,
        run_configs: Any = None,
    ) -> None:
        """``events``: the bus whose kept events give a running run's progress;
        ``run_configs`` (:class:`~.run_configs.RunConfigs`) the configs reruns start with."""
        # Records written before secrets were scrubbed in every form may still hold one:
        # what a client reads of a run (its detail, its notebook) is scrubbed again.
        self._scrubber = scrubber
        self._store = store
        self._manager = manager
        self._notebooks = notebooks
        self._approvals = approvals
        self._events = events
        self._run_configs = run_configs
        #: The reruns going (``POST agent/runs/{id}/rerun``).
        self.reruns = Reruns()

    # --- listing ---------------------------------------------------------------------------

    async def list(
        self,
        *,
        owner: str,
        program: str | None = None,
        limit: int = 50,
        before: str | None = None,
    ) -> dict[str, Any]:
        """``GET agent/runs``: ``{runs, next}`` of ``owner`` (:data:`ALL_OWNERS`: every
        owner's), newest first.

        ``program`` a name (every version) or ``NAME@vN``; ``""`` filters nothing. A
        ``limit`` outside 1..1000 or a malformed ``before`` cursor is ``bad_page``.
        """
        program = program or None
        of = None if owner == ALL_OWNERS else owner
        try:
            runs, cursor = await asyncio.to_thread(
                lambda: self._store.list_runs(program=program, limit=limit, before=before, owner=of)
            )
        except ValueError as exc:
            raise BadRequest(str(exc), reason="bad_page") from None
        return {"runs": [r.to_json() for r in runs], "next": cursor}

    async def of_chat(self, chat_id: str, *, owner: str, limit: int) -> dict[str, Any]:
        """``{runs, next: null}``: the chat's runs newest first (its running run, then the
        runs of its turns), at most ``limit`` (1..1000, else ``bad_page``), as :meth:`list`
        shows each; ``NotFound`` for an unknown chat (or another owner's)."""
        if not 1 <= limit <= MAX_CHAT_RUNS:
            raise BadRequest(
                f"limit must be between 1 and {MAX_CHAT_RUNS}, got {limit}", reason="bad_page"
            )
        chat = await asyncio.to_thread(self._store.get_chat, chat_id)
        if chat is None or chat.owner != owner:
            raise NotFound(f"no chat {shown(chat_id)}")
        turns = await asyncio.to_thread(self._store.list_turns, chat_id)
        ids = [t.run_id for t in reversed(turns)]
        active = self._manager.active_run_id(chat_id)
        if active and active not in ids:
            ids.insert(0, active)

        def read() -> list[dict[str, Any]]:
            rows = (self._store.get_run(run_id) for run_id in ids[:limit])
            return [row.to_json() for row in rows if row is not None]

        return {"runs": await asyncio.to_thread(read), "next": None}

    # --- one run ---------------------------------------------------------------------------

    async def check(self, run_id: str, *, owner: str, admin: bool = False) -> None:
        """``NotFound`` unless the run is ``owner``'s (any run for an ``admin``). A run
        with no stored summary yet (reserved after a closing one) is its chat's owner's;
        one this server does not know either is the server user's (``""``)."""
        if not is_run_id(run_id):
            raise no_run(run_id)
        if admin:
            return
        found = await asyncio.to_thread(self._store.get_run, run_id)
        if found is not None:
            run_owner = found.owner
        else:
            chat_id = self._manager.run_chat(run_id)
            chat = await asyncio.to_thread(self._store.get_chat, chat_id) if chat_id else None
            run_owner = chat.owner if chat is not None else ""
        if run_owner != owner:
            raise no_run(run_id)

    async def wait(self, run_id: str) -> None:
        """Return once the run has ended (at once for a run that is not going)."""
        if run_id in self.reruns:
            await self.reruns.wait(run_id)
            return
        await self._manager.wait(run_id)

    async def _log_path(self, run_id: str, owner: str, admin: bool) -> Path:
        await self.check(run_id, owner=owner, admin=admin)
        return self._manager.log_path(run_id)

    async def _trace(self, run_id: str, owner: str, admin: bool) -> TraceFile:
        path = await self._log_path(run_id, owner, admin)
        try:
            return await asyncio.to_thread(read_log, path)
        except FileNotFoundError:
            raise NotFound(f"no trace for run {run_id!r}") from None

    async def detail(
        self, run_id: str, *, owner: str, admin: bool = False, full: bool = False
    ) -> dict[str, Any]:
        """``GET agent/runs/{id}``: turn record + effect log (``show_run``), and ``summary``;
        large fields are cut unless ``full``."""
        from jupyter_agent.trace.show import show_run

        trace = await self._trace(run_id, owner, admin)
        # The summary first: a run's end stores its turn and its ended summary in one
        # transaction, so an ended summary read first means its turn is read too (read
        # after, a turn stored in between would be missing beside an ended summary).
        summary = await asyncio.to_thread(self._store.get_run, run_id)
        turn = await asyncio.to_thread(self._store.get_turn_by_run, run_id)
        # The run's owner's proposals (an admin reads another owner's run).
        run_owner = summary.owner if summary is not None else owner
        rows = await asyncio.to_thread(
            lambda: self._store.list_proposals(run_ids=[run_id], owner=run_owner)
        )
        record = {**turn.to_json(), "proposals": [p.turn_json() for p in rows]} if turn else None
        body = show_run(trace, record, full=full)
        body["summary"] = summary.to_json() if summary else None
        if summary is not None and summary.status == "running" and self._events is not None:
            channel = CHANNEL + run_id if summary.rerun_of else summary.chat_id
            overlay_live(body, run_id, self._events.since(channel, 0))
        return self._scrubber.clean_json(body)

    async def log(self, run_id: str, *, owner: str, admin: bool = False) -> bytes:
        """The run's JSONL effect log as written."""
        path = await self._log_path(run_id, owner, admin)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise NotFound(f"no trace for run {run_id!r}") from None

    async def stats(self, run_id: str, *, owner: str, admin: bool = False) -> dict[str, Any]:
        """``GET agent/runs/{id}/stats``: per model call usage and cost, and totals."""
        from jupyter_agent.trace.stats import run_stats

        return run_stats(await self._trace(run_id, owner, admin))

    async def diff(
        self, run_id: str, other: str, *, owner: str, admin: bool = False
    ) -> dict[str, Any]:
        """``GET agent/runs/{a}/diff/{b}``: where the two runs first part and the rest side
        by side (:func:`~jupyter_agent.trace.compare.diff.diff_runs`); ``NotFound`` unless
        both are the caller's (any for an ``admin``)."""
        from jupyter_agent.trace.compare.diff import diff_runs

        a = await self._trace(run_id, owner, admin)
        b = await self._trace(other, owner, admin)
        body = await asyncio.to_thread(diff_runs, a, b)
        return self._scrubber.clean_json(body)

    async def notebook(self, run_id: str, *, owner: str, admin: bool = False) -> dict[str, Any]:
        """The turn as an nbformat v4 notebook (JSON)."""
        from jupyter_agent.trace.notebook import run_notebook

        trace = await self._trace(run_id, owner, admin)
        turn = await asyncio.to_thread(self._store.get_turn_by_run, run_id)
        blobs = self._manager.runs_dir  # where the run's notebook.fetch copies are
        nb = await asyncio.to_thread(lambda: run_notebook(trace, turn=turn, blobs_dir=blobs))
        return self._scrubber.clean_json(dict(nb))

    async def write_notebook(
        self, run_id: str, *, owner: str, path: str | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """``POST agent/runs/{id}/notebook``: ``{path, created}``.

        Without ``path``: into the trace folder, named ``<chat title> - turn <k>``, never
        over an existing file; with ``path`` (a contents path ending in ``.ipynb``,
        ``bad_path`` else): there, ``Conflict`` if it exists unless ``overwrite`` (see
        :mod:`jupyter_agent.runtime.notebook.exports`).
        """
        target = None if path is None else self._notebooks.target(path)
        self._notebooks.check()
        nb = await self.notebook(run_id, owner=owner)
        if target is not None:
            written = await self._notebooks.write_at(target, nb, overwrite=overwrite)
            return {"path": written, "created": True}
        chat_id = (nb.get("metadata", {}).get("jupyter_agent") or {}).get("chat_id")
        chat = await asyncio.to_thread(self._store.get_chat, str(chat_id)) if chat_id else None
        if chat is not None and chat.owner != owner:  # never another owner's title
            chat = None
        turns = await asyncio.to_thread(self._store.list_turns, chat.id) if chat else []
        number = next((k for k, t in enumerate(turns, 1) if t.run_id == run_id), None)
        stem = trace_stem(chat.title if chat else "", run_id, number)
        written, created = await self._notebooks.write_new(stem, nb)
        return {"path": written, "created": created}

    # --- the person's acts on a run --------------------------------------------------------

    async def break_run(self, run_id: str, *, owner: str, hard: bool = False) -> dict[str, Any]:
        """``POST agent/break/{run_id}``: ``{run_id, state}``; ``NotFound`` for an unknown
        run (or another owner's). Soft: at the run's next drain; hard: at once. Idempotent."""
        await self.check(run_id, owner=owner)
        if run_id in self.reruns:  # a rerun takes no mail: any break stops it at once
            state = await self.reruns.break_run(run_id)
        else:
            state = await self._manager.break_run(run_id, hard=hard)
        if state is None:
            raise no_run(run_id)
        return {"run_id": run_id, "state": state}

    async def rerun(
        self, run_id: str, *, owner: str, model: str | None = None, program: str | None = None
    ) -> dict[str, Any]:
        """``POST agent/runs/{id}/rerun``: a new run fed this run's recorded inputs, live
        against ``model`` (a tier or model name, as a chat's; None: the chat's own model
        when it still passes today's policy, else its agent's tiers)
        and ``program`` (``toolcaller@vN``; None: the original's); see
        :mod:`~jupyter_agent.runtime.loop.rerun`. ``{run_id, rerun_of, program, model}``.
        ``Conflict`` for a run still going, ``BadRequest`` ``bad_model``/``bad_program``/
        ``bad_run``; nothing starts when refused."""
        original, trace = await self.ended_run(run_id, owner=owner)
        configs = self._run_configs
        if configs is None:
            raise BadRequest("reruns are not available on this server", reason="bad_run")
        if model is not None:
            problem = await asyncio.to_thread(
                configs.model_problem, model, agent=original.agent, owner=original.owner
            )
            if problem:
                raise BadRequest(problem, reason="bad_model")
        chosen = await self.program(program or original.program)
        config = configs.run_config(original.agent, owner=original.owner, model=model)
        chat = await asyncio.to_thread(self._store.get_chat, original.chat_id)
        if model is None and chat is not None and chat.model:
            # The chat's own model (as its runs get it), checked against today's policy.
            problem = await asyncio.to_thread(
                configs.model_problem, chat.model, agent=original.agent, owner=original.owner
            )
            if not problem:
                config = configs.run_config(original.agent, owner=original.owner, model=chat.model)
        new = new_id("run")
        with self.reruns.slot(owner):
            summary = await start_rerun(
                original=original,
                trace=trace,
                config=config,
                program=chosen,
                services=self._manager.services,
                log_path=self._manager.log_path(new),
                run_id=new,
                going=self.reruns,
            )
        return {
            "run_id": new,
            "rerun_of": run_id,
            "program": summary.program,
            "model": summary.model,
        }

    async def ended_run(self, run_id: str, *, owner: str) -> tuple[RunSummary, TraceFile]:
        """An ended run of ``owner`` and its log (what a rerun is fed); ``NotFound``,
        ``Conflict`` (``running``) for a run still going."""
        await self.check(run_id, owner=owner)
        original = await asyncio.to_thread(self._store.get_run, run_id)
        if original is None:
            raise no_run(run_id)
        if original.status == "running":
            raise Conflict(f"run {run_id} is still going: re-run it once it ends", reason="running")
        return original, await self._trace(run_id, owner, False)

    @property
    def run_configs(self) -> Any:
        """The configs reruns (and evals) start with (None: reruns are not available)."""
        return self._run_configs

    @property
    def manager(self) -> RunManager:
        """The run manager (its services and log paths)."""
        return self._manager

    async def program(self, key: str) -> RunProgram:
        """The run program ``key`` names (``bad_program`` when it is not one)."""
        if not re.fullmatch(r"toolcaller@v[1-9][0-9]{0,5}", key):
            raise BadRequest(
                f"a rerun's program is a version of toolcaller (toolcaller@vN), not {key[:80]!r}",
                reason="bad_program",
            )
        registry = self._manager.services.programs
        if registry is None:
            return RunProgram.of_builtin(key) if key in BUILTIN else _no_program(key)
        try:
            return RunProgram.of(await asyncio.to_thread(registry.resolve_key, key))
        except ProgramFault as fault:
            raise BadRequest(f"{key}: {fault}", reason="bad_program") from None

    async def decide_approval(
        self,
        run_id: str,
        approval_id: str,
        *,
        owner: str,
        approve: bool,
        rest_of_turn: bool = False,
    ) -> dict[str, Any]:
        """``POST agent/runs/{run_id}/approvals/{approval_id}``: answer a wait of the run
        (``toolcaller@v5``); ``{run_id, approval_id, approve, rest_of_turn}``. NotFound for
        a wait that is not open, ApprovalDecided (409) for one already answered or ended."""
        await self.check(run_id, owner=owner)
        self._approvals.decide(run_id, approval_id, approve=approve, rest=rest_of_turn)
        return {
            "run_id": run_id,
            "approval_id": approval_id,
            "approve": approve,
            "rest_of_turn": bool(approve and rest_of_turn),
        }
