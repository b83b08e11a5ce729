"""Approval routes: ``POST agent/runs/{run_id}/approvals/{approval_id}``.

Thin, like the other handlers: it authenticates, authorizes (``execute`` on ``agent``: an
approval lets code run), parses the body ``{approve: bool, rest_of_turn?: bool}``
(:mod:`.parse`) and calls the runs service's
:meth:`~jupyter_agent.runtime.runs.run_service.RunService.decide_approval`.
200 ``{run_id, approval_id, approve, rest_of_turn}``; 404 for a wait that is not open
(unknown, or its run ended long ago); 409 ``approval_decided`` for one already answered
(or ended: timed out, broken).
"""

from __future__ import annotations

from tornado import web

from jupyter_agent.server import parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = ["ApprovalHandler"]


class ApprovalHandler(AgentHandler):
    """``POST agent/runs/{run_id}/approvals/{approval_id}`` ``{approve, rest_of_turn?}``."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self, run_id: str, approval_id: str) -> None:
        """Answer the run's wait for the person."""
        approve, rest = parse.approval(self.json_body())
        runs = (await self.services()).runs
        answer = await runs.decide_approval(
            run_id, approval_id, owner=self.owner, approve=approve, rest_of_turn=rest
        )
        self.finish_json(answer)
