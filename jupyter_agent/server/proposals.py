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

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.server import parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = ["ProposalDecisionHandler", "ProposalUndoHandler", "ProposalsHandler", "VariablesHandler"]


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
