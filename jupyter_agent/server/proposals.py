"""The person's notebooks: deciding the agent's notebook edits, undoing them, listing them;
the variables of a notebook's kernel (``GET agent/variables?path=``).

Thin: each method authenticates, authorizes (deciding and undoing change the person's
notebook: ``execute``, like sending a message; listing needs ``read``), parses the body
(:func:`.parse.proposal_decision`) and calls the
:class:`~jupyter_agent.runtime.notebook.proposals.ProposalService` (``services.proposals``), whose
refusals (``not_found``, ``proposal_decided``, ``proposal_conflict``, ``bad_cells``,
``bad_decision``) :mod:`.base` answers. Proposals belong to the request's owner
(:func:`~jupyter_agent.server.auth.owners.request_owner`), as memories do: another owner's id
answers 404. ``agent/variables`` looks into the person's kernel (a silent execute:
``execute``) and answers :class:`~jupyter_agent.runtime.notebook.person_variables.PersonVariables`'s
refusals (``no_kernel``, ``kernel_busy``, ``path_refused``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_agent.exceptions import RequestError
from jupyter_agent.server import parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = [
    "ProposalDecisionHandler",
    "ProposalUndoHandler",
    "ProposalsHandler",
    "VariablesHandler",
    "CompleteHandler",
]


class VariablesHandler(AgentHandler):
    """``GET agent/variables?path=NOTEBOOK``: the variables of its kernel, summarised."""

    @web.authenticated
    @authorized_execute
    async def get(self) -> None:
        """``{path, kernel, variables: [{name, type, summary}], total, cut, more}``."""
        path = self.get_query_argument("path", "")
        variables = (await self.services()).variables
        self.finish_json(await variables.variables(path, owner=self.owner))


class ProposalsHandler(AgentHandler):
    """``GET agent/proposals?chat_id=``: ``{proposals: [row JSON]}``, oldest first."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The proposals (of one chat, with ``chat_id``)."""
        chat_id = self.get_query_argument("chat_id", None) or None
        proposals = (await self.services()).proposals
        rows = await proposals.list(owner=self.owner, chat_id=chat_id)
        self.finish_json({"proposals": [r.to_json() for r in rows]})


class ProposalDecisionHandler(AgentHandler):
    """``POST agent/runs/{run_id}/proposals/{proposal_id}`` ``{apply, cells?}``."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self, run_id: str, proposal_id: str) -> None:
        """Apply (all, or the edits of ``cells``) or discard: 200 ``{outcome}``; 409
        ``proposal_conflict`` (the notebook changed: nothing written) or
        ``proposal_decided``; 404 for a proposal this run did not make."""
        apply, cells = parse.proposal_decision(self.json_body())
        proposals = (await self.services()).proposals
        outcome = await proposals.decide(
            proposal_id, owner=self.owner, apply=apply, cells=cells, run_id=run_id
        )
        self.finish_json({"outcome": outcome})


class ProposalUndoHandler(AgentHandler):
    """``POST agent/proposals/{proposal_id}/undo``."""

    @web.authenticated
    @authorized_execute
    async def post(self, proposal_id: str) -> None:
        """Undo an applied proposal: 200 ``{outcome: "undone"}``; 409 ``proposal_conflict``
        (changed since it was applied) or ``proposal_decided`` (not applied)."""
        proposals = (await self.services()).proposals
        outcome = await proposals.undo(proposal_id, owner=self.owner)
        self.finish_json({"outcome": outcome})


class CompleteHandler(AgentHandler):
    """``POST agent/complete`` ``{path, cell_id?, prefix, suffix, language}``: an inline
    completion, streamed as NDJSON: ``{"delta": text}`` lines as the model writes, then one
    ``{"text", "model", "usage", "cost_usd"}`` line (``text``: what to insert), or an
    ``{"error": {message, reason}}`` line when the model failed once the stream began. The
    person typing on aborts the request: the model's stream is closed."""

    body_methods = frozenset({"POST"})
    _task: asyncio.Task[dict[str, Any]] | None = None

    @web.authenticated
    @authorized_execute
    async def post(self) -> None:
        """Complete; the refusals are answered before the first line (400, 404, 409, 429)."""
        body = self.json_body()
        parse.only_keys(
            body, ("path", "cell_id", "prefix", "suffix", "language"), reason="unknown_field"
        )
        path = parse.optional_string(body, "path", reason="bad_path") or ""
        cell_id = parse.optional_string(body, "cell_id", reason="bad_cell")
        prefix = parse.optional_string(body, "prefix", reason="bad_prefix") or ""
        suffix = parse.optional_string(body, "suffix", reason="bad_suffix") or ""
        language = parse.optional_string(body, "language", reason="bad_language") or "python"
        complete = (await self.services()).complete
        call = await complete.prepare(
            owner=self.owner, path=path, cell_id=cell_id, prefix=prefix, suffix=suffix,
            language=language,
        )  # fmt: skip
        self.set_header("Content-Type", "application/x-ndjson; charset=utf-8")
        self.set_header("Cache-Control", "no-store")

        def on_text(delta: str) -> None:
            self.write(json.dumps({"delta": delta}) + "\n")
            # A client gone mid-delta fails this flush: the heartbeat's next write finds it
            # and cancels the call; the failure itself is read here, never left unretrieved.
            self.flush().add_done_callback(lambda f: f.exception())

        self._task = asyncio.ensure_future(complete.run(call, on_text=on_text))
        beat = asyncio.ensure_future(self._heartbeat())
        try:
            answer = await self._task
        except asyncio.CancelledError:
            return  # the person typed on: nothing more to say
        except RequestError as err:  # the model failed after the stream began: said last
            answer = {"error": {"message": err.message, "reason": err.reason}}
        finally:
            beat.cancel()
        self.finish(json.dumps(answer) + "\n")

    async def _heartbeat(self) -> None:
        """An empty line every quarter second until the answer: a client that went away
        is found at the next write (a server does not see a close while it only waits)."""
        try:
            while True:
                await asyncio.sleep(0.25)
                self.write("\n")
                await self.flush()
        except (StreamClosedError, asyncio.CancelledError):
            if self._task is not None and not self._task.done():
                self._task.cancel()

    def on_connection_close(self) -> None:
        """The browser aborted the request: stop the model call (its stream closes)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        super().on_connection_close()
