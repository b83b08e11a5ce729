"""The base of every agent REST handler: auth, one error writer, JSON in and out.

Every handler derives from :class:`AgentHandler`: Jupyter's token authentication
(``@web.authenticated``), Jupyter's authorizer on resource ``agent`` (``@authorized``:
reads need ``read``; sending, breaking and changing settings need ``execute``, given as
``@authorized("execute")`` because the default mapping would ask for ``write``), and one
``write_error`` answering ``{message, reason}`` JSON. A
:class:`~jupyter_agent.runtime.service.ServiceError` raised by the service becomes its
status (4xx) with its message and reason; any other exception is a 500 whose details stay
in the server log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from jupyter_agent.runtime.service import ServiceError

if TYPE_CHECKING:
    from jupyter_agent.runtime.service import AgentService
    from jupyter_agent.server.app import JupyterAgent

__all__ = ["AUTH_RESOURCE", "AgentHandler", "authorized_execute"]

#: The authorization resource of every agent route.
AUTH_RESOURCE = "agent"

_F = TypeVar("_F", bound=Callable[..., Any])


def authorized_execute(method: _F) -> _F:
    """``@authorized("execute")``: for routes that run code or spend money (send, break,
    settings, writing a notebook), whatever their HTTP method."""
    return cast("_F", authorized("execute")(method))


class AgentHandler(ExtensionHandlerMixin, APIHandler):
    """Base of the agent's REST handlers.

    An ``APIHandler`` (a ``JupyterHandler``), so an unauthenticated request gets 403 JSON
    instead of a redirect to the login page, cross-origin checks apply, and a POST on a
    cookie session needs the ``_xsrf`` token.
    """

    auth_resource = AUTH_RESOURCE

    @property
    def agent(self) -> JupyterAgent:
        """The running ``JupyterAgent`` extension app (its traits and managers)."""
        return cast("JupyterAgent", self.extensionapp)

    async def service(self) -> AgentService:
        """The agent service, started (call after authorization: starting may start kernels)."""
        service = self.agent.service
        if service is None:
            raise web.HTTPError(503, "The agent service is not available", reason="unavailable")
        await service.start()
        return service

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        """Give a ServiceError its own status before the error is written."""
        exc_info = kwargs.get("exc_info")
        if exc_info is not None and isinstance(exc_info[1], ServiceError):
            status_code = exc_info[1].status
        super().send_error(status_code, **kwargs)

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """A refused request is a warning line, not a traceback."""
        if isinstance(value, ServiceError):
            self.log.warning(
                "%d %s %s: %s", value.status, self.request.method, self.request.path, value
            )
            return
        super().log_exception(typ, value, tb)

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
            if isinstance(exc, ServiceError):
                message, reason = exc.message, exc.reason
            elif isinstance(exc, web.HTTPError):
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
