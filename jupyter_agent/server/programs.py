"""Program routes: ``agent/programs``, ``agent/programs/{name}[@vN]`` and
``agent/programs/{name}/rollback``.

Thin: each method authenticates, authorizes, parses and calls the
:class:`~jupyter_agent.programs.service.ProgramService` (``services.programs``). Reads need
``read`` on resource ``agent``. Deploying and rolling back are admin acts: ``write`` on
their own resource ``agent_programs`` (so an Authorizer, JupyterHub's scopes, can refuse
them while allowing chats) AND the trait ``JupyterAgent.program_deploy``: ``token`` (the
default) lets only token-authenticated requests through (the CLI, scripts; a browser
cookie session gets 403 ``browser_deploy``), ``browser`` also cookie sessions, ``off``
nobody (403 ``deploy_off``). With several owners (``JupyterAgent.owners`` resolving to
``identity``, e.g. under JupyterHub) only an admin (``admin_users`` and ``read`` on
``agent_admin``) deploys or rolls back (403 ``not_admin``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.exceptions import BadRequest, Forbidden
from jupyter_agent.server import parse
from jupyter_agent.server.auth.owners import owners_mode
from jupyter_agent.server.base import AgentHandler

__all__ = ["PROGRAMS_RESOURCE", "ProgramHandler", "ProgramRollbackHandler", "ProgramsHandler"]

#: The authorization resource of deploys and rollbacks.
PROGRAMS_RESOURCE: Final = "agent_programs"
_VERSIONED: Final = re.compile(r"([a-z][a-z0-9_-]{0,39})(?:@v([1-9][0-9]{0,5}))?")
_REASON: Final = "program_refused"
_MAX_VERSION: Final = 999_999  # what _VERSIONED reads: NAME@v1 to NAME@v999999
_F = TypeVar("_F", bound=Callable[..., Any])


def _admin(method: _F) -> _F:
    """``@authorized(action="write", resource="agent_programs")``, typed."""
    return cast("_F", authorized(action="write", resource=PROGRAMS_RESOURCE)(method))


class _Admin(AgentHandler):
    async def check_deploy_allowed(self) -> None:
        """Forbidden unless ``program_deploy`` lets this request's kind of session in, and,
        with several owners (``owners`` resolving to ``identity``), unless the request is
        an admin's (``admin_users``): a deployed version runs in every owner's runs (on a
        shared database, on every user's server), so one user must not deploy for all."""
        mode = self.agent.program_deploy
        if mode == "off":
            raise Forbidden(
                "deploying programs is off on this server (JupyterAgent.program_deploy)",
                reason="deploy_off",
            )
        several = owners_mode(str(self.agent.owners), self.identity_provider) == "identity"
        if several and not await self.is_admin():
            raise Forbidden(
                "with several users, only an admin (JupyterAgent.admin_users) deploys or "
                "rolls back programs: a program runs in every user's runs",
                reason="not_admin",
            )
        # JupyterLab's own requests carry the server token (the page config hands it to
        # @jupyterlab/services), so token-authenticated alone does not mean "not a
        # browser": a browser also sends fetch metadata or Origin, which page scripts
        # cannot remove; the CLI and scripts send neither.
        browser = any(
            self.request.headers.get(name)
            for name in ("Sec-Fetch-Site", "Sec-Fetch-Mode", "Origin")
        )
        if mode == "token" and (browser or not self.token_authenticated):
            raise Forbidden(
                "deploying from the browser is off: set JupyterAgent.program_deploy = 'browser'",
                reason="browser_deploy",
            )

    def who(self) -> str:
        user = self.current_user
        return str(getattr(user, "username", "") or "")


class ProgramsHandler(AgentHandler):
    """``GET agent/programs``: every family, its versions and each layer's active one."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish_json(await (await self.services()).programs.list())


class ProgramHandler(_Admin):
    """``GET agent/programs/{name}[@vN]`` (one version with its files) and ``POST
    agent/programs/{name}`` ``{files, agent?, activate?}`` (deploy: 201)."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        match = _VERSIONED.fullmatch(name)
        if match is None:
            raise BadRequest(f"{name[:60]!r}: use NAME or NAME@vN", reason="bad_request")
        family, version = match.group(1), match.group(2)
        programs = (await self.services()).programs
        self.finish_json(await programs.show(family, int(version) if version else None))

    @web.authenticated
    @_admin
    async def post(self, name: str) -> None:
        await self.check_deploy_allowed()
        body = self.json_body()
        parse.only_keys(body, ("files", "agent", "activate"), reason=_REASON)
        files: Any = parse.mapping(body, "files", reason=_REASON)
        agent = parse.string(body, "agent", reason=_REASON, default="")
        activate = parse.flag(body, "activate", reason=_REASON, default=True)
        programs = (await self.services()).programs
        answer = await programs.deploy(name, files, agent=agent, by=self.who(), activate=activate)
        self.finish_json(answer, status=201)


class ProgramRollbackHandler(_Admin):
    """``POST agent/programs/{name}/rollback`` ``{agent?, to?}``: 200 ``{active}``."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @_admin
    async def post(self, name: str) -> None:
        await self.check_deploy_allowed()
        body = self.json_body()
        parse.only_keys(body, ("agent", "to"), reason="bad_request")
        agent = parse.string(body, "agent", reason="bad_request", default="")
        to = parse.integer(body, "to", reason="bad_request", minimum=1, maximum=_MAX_VERSION)
        programs = (await self.services()).programs
        self.finish_json(await programs.rollback(name, agent=agent, to=to, by=self.who()))
