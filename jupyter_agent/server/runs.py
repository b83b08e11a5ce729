"""Run routes: ``agent/runs``, ``agent/runs/{id}`` (+ ``stats``, ``notebook``), ``agent/break``.

Thin: each method authenticates, authorizes, parses the query or body into typed
arguments (:mod:`.parse`) and calls the runs service
(:class:`~jupyter_agent.runtime.runs.run_service.RunService`).
``GET agent/runs/{id}?log=raw`` answers the run's JSONL effect log as written
(``application/x-ndjson``), which ``jupyter agent replay RUN --addr`` fetches; ``?full=1``
leaves large fields uncut.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.exceptions import Forbidden
from jupyter_agent.server import parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = [
    "BreakHandler",
    "RerunHandler",
    "RunDiffHandler",
    "RunHandler",
    "RunNotebookHandler",
    "RunStatsHandler",
    "RunsHandler",
]


class RunsHandler(AgentHandler):
    """``GET agent/runs?program=&limit=&before=&owner=``: ``{runs, next}``, newest first.

    ``owner``: the caller's own runs when absent; ``*`` (every owner's) or another name
    only for an admin (else 403 ``not_admin``)."""

    async def _listed_owner(self) -> str:
        mine = self.owner
        asked = self.get_query_argument("owner", None)
        if asked is None or asked == mine:
            return mine
        if not await self.is_admin():
            raise Forbidden("only an admin lists another owner's runs", reason="not_admin")
        return asked

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """One page of run summaries; ``next`` is the cursor of the next page, or null."""
        program = self.get_query_argument("program", None)
        owner = await self._listed_owner()
        limit = parse.query_int(self, "limit", reason="bad_limit", default=50)
        before = self.get_query_argument("before", None)
        runs = (await self.services()).runs
        page = await runs.list(owner=owner, program=program, limit=limit, before=before)
        self.finish_json(page)


class RunHandler(AgentHandler):
    """``GET agent/runs/{id}``: turn record + effect log; ``?log=raw``: the JSONL itself."""

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        """Answer the run as JSON, or its raw log."""
        raw = self.get_query_argument("log", None) == "raw"
        full = parse.query_flag(self, "full")
        runs = (await self.services()).runs
        owner, admin = self.owner, await self.is_admin()
        if raw:
            data = await runs.log(run_id, owner=owner, admin=admin)
            self.finish(data, set_content_type="application/x-ndjson")
            return
        self.finish_json(await runs.detail(run_id, owner=owner, admin=admin, full=full))


class RunStatsHandler(AgentHandler):
    """``GET agent/runs/{id}/stats``: per model call usage and cost, and totals."""

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        """Answer ``{run_id, calls, totals}``."""
        runs, admin = (await self.services()).runs, await self.is_admin()
        self.finish_json(await runs.stats(run_id, owner=self.owner, admin=admin))


class RunNotebookHandler(AgentHandler):
    """``GET agent/runs/{id}/notebook`` (the .ipynb JSON); ``POST`` ``{path?}`` writes it."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        """Answer the turn as an nbformat v4 notebook."""
        runs, admin = (await self.services()).runs, await self.is_admin()
        self.finish_json(await runs.notebook(run_id, owner=self.owner, admin=admin))

    @web.authenticated
    @authorized_execute
    async def post(self, run_id: str) -> None:
        """Write the notebook (``{path?, overwrite?}``); 201 ``{path, created}``, or 200
        when the trace folder already held exactly this notebook."""
        body = self.json_body()
        parse.only_keys(body, ("path", "overwrite"), reason="unknown_field")
        overwrite = parse.flag(body, "overwrite", reason="bad_overwrite")
        path = parse.optional_string(body, "path", reason="bad_path")
        runs = (await self.services()).runs
        answer = await runs.write_notebook(run_id, owner=self.owner, path=path, overwrite=overwrite)
        self.finish_json(answer, status=201 if answer["created"] else 200)


class BreakHandler(AgentHandler):
    """``POST agent/break/{run_id}`` ``{hard?}``: 202 ``{run_id, state}``; 404 unknown run."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self, run_id: str) -> None:
        """Break the run: soft at its next drain, hard at once; idempotent."""
        body = self.json_body()
        parse.only_keys(body, ("hard",), reason="unknown_field")
        hard = parse.flag(body, "hard", reason="bad_hard")
        runs = (await self.services()).runs
        self.finish_json(await runs.break_run(run_id, owner=self.owner, hard=hard), status=202)


class RerunHandler(AgentHandler):
    """``POST agent/runs/{run_id}/rerun`` ``{model?, program?}``: 202 ``{run_id, rerun_of,
    program, model}``: a new run fed the run's recorded inputs (not a turn of its chat)."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self, run_id: str) -> None:
        """Start the rerun; 409 ``running`` for a run still going."""
        body = self.json_body()
        parse.only_keys(body, ("model", "program"), reason="unknown_field")
        model = parse.optional_string(body, "model", reason="bad_model")
        program = parse.optional_string(body, "program", reason="bad_program")
        runs = (await self.services()).runs
        answer = await runs.rerun(
            run_id,
            owner=self.owner,
            model=model.strip() if model else None,
            program=program.strip() if program else None,
        )
        self.finish_json(answer, status=202)


class RunDiffHandler(AgentHandler):
    """``GET agent/runs/{run_id}/diff/{other}``: where two runs first part, and the rest of
    each side by side (``identical``, ``divergence``, ``summary``)."""

    @web.authenticated
    @authorized
    async def get(self, run_id: str, other: str) -> None:
        """The diff (both runs the caller's; an admin's any)."""
        runs, admin = (await self.services()).runs, await self.is_admin()
        self.finish_json(await runs.diff(run_id, other, owner=self.owner, admin=admin))


class EvalsHandler(AgentHandler):
    """``POST agent/evals`` ``{suite?, runs?, models?, program?, repeats?, concurrency?}``:
    202 with the eval's state: a suite's cases (and recorded runs) run as runs of their
    own, checked, then reported (:mod:`jupyter_agent.runtime.evals.service`)."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self) -> None:
        """Start the eval; refused with nothing started on bad input."""
        body = self.json_body()
        parse.only_keys(
            body,
            ("suite", "runs", "models", "program", "repeats", "concurrency"),
            reason="unknown_field",
        )
        suite = parse.optional_string(body, "suite", reason="bad_suite")
        runs = parse.string_list(body, "runs", reason="bad_suite", what="run ids")
        models = parse.string_list(body, "models", reason="bad_model", what="model names")
        program = parse.optional_string(body, "program", reason="bad_program")
        repeats = parse.integer(body, "repeats", reason="bad_eval", minimum=1, maximum=20)
        concurrency = parse.integer(body, "concurrency", reason="bad_eval", minimum=1, maximum=16)
        evals = (await self.services()).evals
        answer = await evals.start(
            owner=self.owner,
            suite=suite.strip() if suite is not None else None,
            runs=[r.strip() for r in runs],
            models=[m.strip() or None for m in models] or [None],
            program=program.strip() if program else None,
            repeats=repeats or 1,
            concurrency=concurrency or 4,
        )
        self.finish_json(answer, status=202)


class EvalHandler(AgentHandler):
    """``GET agent/evals/{eval_id}``: the eval's state, its cases' results and report."""

    @web.authenticated
    @authorized
    async def get(self, eval_id: str) -> None:
        """The eval's state; 404 for an unknown one (or another owner's)."""
        evals = (await self.services()).evals
        self.finish_json(await evals.get(eval_id, owner=self.owner))
