"""REST handlers of the agent API (thin: they translate HTTP, managers do the work).

Every handler derives from ``AgentHandler``: Jupyter's token authentication
(``@web.authenticated``), Jupyter's authorizer on resource ``agent`` (``@authorized``:
reads need ``read``; sending, breaking and changing settings need ``execute``, given as
``@authorized("execute")``), and one ``write_error`` answering ``{message, reason}`` JSON.

Routes are listed in ``default_handlers`` (patterns relative to the server's base URL);
``JupyterAgent.initialize_handlers`` registers them.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

if TYPE_CHECKING:
    from jupyter_agent.server.app import JupyterAgent

__all__ = ["AUTH_RESOURCE", "AgentHandler", "StatusHandler", "default_handlers"]

#: The authorization resource of every agent route.
AUTH_RESOURCE = "agent"


class AgentHandler(ExtensionHandlerMixin, APIHandler):
    """Base of the agent's REST handlers.

    An ``APIHandler`` (a ``JupyterHandler``), so an unauthenticated request gets 403 JSON
    instead of a redirect to the login page, and cross-origin checks apply.
    """

    auth_resource = AUTH_RESOURCE

    @property
    def agent(self) -> JupyterAgent:
        """The running ``JupyterAgent`` extension app (its traits and managers)."""
        return cast("JupyterAgent", self.extensionapp)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Answer every error as ``{"message": str, "reason": str | null}`` JSON.

        ``message`` is the ``HTTPError``'s log message (what went wrong, for a person);
        ``reason`` its reason, else the HTTP phrase. Any other exception is a 500 whose
        details stay in the server log: no traceback or exception text is sent.
        """
        self.set_header("Content-Type", "application/json")
        try:
            phrase: str | None = HTTPStatus(status_code).phrase
        except ValueError:
            phrase = None
        message = phrase or "Error"
        reason = phrase
        exc_info = kwargs.get("exc_info")
        if exc_info is not None:
            exc = exc_info[1]
            if isinstance(exc, web.HTTPError):
                if exc.log_message:
                    message = exc.log_message % exc.args if exc.args else exc.log_message
                reason = exc.reason or phrase
        self.finish(json.dumps({"message": message, "reason": reason}))

    def json_body(self) -> dict[str, Any]:
        """Decode the request body as a JSON object.

        Raises ``HTTPError`` 413 over ``JupyterAgent.max_body_bytes`` and 400 for a body
        that is not a JSON object. An empty body is ``{}``.
        """
        body = self.request.body or b""
        if len(body) > self.agent.max_body_bytes:
            raise web.HTTPError(
                413,
                "Request body of %d bytes is over the limit of %d bytes",
                len(body),
                self.agent.max_body_bytes,
                reason="body_too_large",
            )
        if not body.strip():
            return {}
        try:
            value = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise web.HTTPError(400, "Invalid JSON body: %s", exc, reason="bad_json") from exc
        if not isinstance(value, dict):
            raise web.HTTPError(400, "The JSON body must be an object", reason="bad_json")
        return value

    def finish_json(self, value: Any, status: int = 200) -> None:
        """Answer ``value`` as JSON with ``status``."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(value))


class StatusHandler(AgentHandler):
    """``GET agent/status``: ``{version, tiers: {name: {provider, model, ready}}, demo}``."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        """Answer the server's version, its tiers' readiness and whether it runs the demo."""
        self.finish_json(self.agent.status())


#: Routes relative to the server's base URL (``JupyterAgent`` joins them with it).
default_handlers: list[tuple[str, type[AgentHandler]]] = [
    (r"/agent/status", StatusHandler),
]
