"""The base of every agent handler: auth, the one error writer, JSON in and out.

Every REST handler derives from :class:`AgentHandler`, the events socket from
:class:`AgentBase`: Jupyter's token authentication (``@web.authenticated``), Jupyter's
authorizer on resource ``agent`` (``@authorized``: reads need ``read``; sending, breaking
and changing settings need ``execute``, given as ``@authorized("execute")`` because the
default mapping would ask for ``write``), and one :meth:`AgentBase.write_error` answering
``{message, reason}`` JSON:

- an :class:`~jupyter_agent.exceptions.AgentError` gets the status :data:`ERROR_STATUS`
  gives its class (the nearest listed class in its MRO). A
  :class:`~jupyter_agent.exceptions.RequestError` answers its own message and reason (and
  ``Retry-After`` for an ``Unavailable`` with ``retry_after_s``); any other error is a 500
  whose details stay in the server's log;
- a tornado ``HTTPError`` (jupyter_server's authentication and authorization, tornado's
  own 404 or 405) keeps its status, its log message and its reason, except a 403 to a
  request nobody was recognised in (no valid token, no login cookie): ``missing or invalid
  token: ...``, reason ``auth`` (Jupyter's ``_xsrf`` check would otherwise answer first on a
  POST; a cookie session still needs its ``_xsrf``);
- anything else is a 500 with no detail.

A path segment or query argument that is not UTF-8 or holds a NUL is ``BadRequest``
(``bad_unicode``), like a body holding a lone surrogate (:mod:`.parse`). Every request's
body is checked once in :meth:`AgentHandler.prepare`: its size (413), and, for a method
that takes none (not in ``body_methods``), that it is empty or ``{}``. Handlers raise
these errors and special-case none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any, ClassVar, Final, Protocol, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from jupyter_agent.exceptions import (
    AgentError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    NotSupported,
    PayloadTooLarge,
    RequestError,
    TooManyRequests,
    Unavailable,
)
from jupyter_agent.runtime.services import Services
from jupyter_agent.server import parse
from jupyter_agent.server.auth.owners import request_is_admin, request_owner

__all__ = [
    "AUTH_RESOURCE",
    "ERROR_STATUS",
    "AgentBase",
    "AgentHandler",
    "AgentHost",
    "authorized_execute",
    "error_status",
    "one_line_refusals",
]

#: The authorization resource of every agent route.
AUTH_RESOURCE = "agent"

#: The HTTP status of each error class; a class not listed takes its nearest listed base's.
ERROR_STATUS: Final[Mapping[type[AgentError], int]] = {
    RequestError: 400,
    BadRequest: 400,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    TooManyRequests: 429,
    NotSupported: 501,
    Unavailable: 503,
    AgentError: 500,
}

_F = TypeVar("_F", bound=Callable[..., Any])


def error_status(cls: type[BaseException]) -> int:
    """The status an error of class ``cls`` answers (500 for anything not in the tree)."""
    for base in cls.__mro__:
        status = ERROR_STATUS.get(base)
        if status is not None:
            return status
    return 500


def authorized_execute(method: _F) -> _F:
    """``@authorized("execute")``: for routes that run code or spend money (send, break,
    settings, writing a notebook), whatever their HTTP method."""
    return cast("_F", authorized("execute")(method))


def _phrase(status: int) -> str | None:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return None


class AgentHost(Protocol):
    """What the handlers read of the extension app (``JupyterAgent``, which jupyter_server
    puts in the handlers' settings): its services and the settings of its routes. Handlers
    import this, never the app's module."""

    @property
    def services(self) -> Services | None:
        """The agent's services (None when they could not be built)."""

    @property
    def max_body_bytes(self) -> int:
        """The largest request body the routes accept."""

    @property
    def program_deploy(self) -> str:
        """Who may deploy programs (``token``, ``browser``, ``off``)."""

    @property
    def owners(self) -> str:
        """How a request's owner is found (``auto``, ``identity``, ``single``)."""

    async def status(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/status`` for ``owner`` (answered even without services)."""


class AgentBase(ExtensionHandlerMixin, JupyterHandler):
    """What every agent handler shares: the app, the services and the error writer."""

    auth_resource = AUTH_RESOURCE
    #: Why the request was refused (a 4xx with a message), for its one log line.
    _refusal: str | None = None

    @property
    def agent(self) -> AgentHost:
        """The running extension app, as the handlers see it (:class:`AgentHost`)."""
        return cast("AgentHost", self.extensionapp)

    async def services(self) -> Services:
        """The agent's services, started (call after authorization: starting may start
        kernels), with the request's owner's settings read.

        ``Unavailable`` (503) when the services could not be built.
        """
        services = self.agent.services
        if services is None:
            raise Unavailable("The agent service is not available", reason="unavailable")
        await services.start()
        try:
            owner = self.owner
        except Forbidden:  # no identity: the route itself answers 403 when it needs one
            return services
        await services.settings.know_owner(owner)
        return services

    @property
    def owner(self) -> str:
        """The request's owner (:func:`~jupyter_agent.server.auth.owners.request_owner`; 403
        ``no_identity`` for an identity without a name)."""
        return request_owner(self)

    async def is_admin(self) -> bool:
        """True for an admin (:func:`~jupyter_agent.server.auth.owners.request_is_admin`,
        awaited: the authorizer may be async)."""
        return await request_is_admin(self)

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A path segment or query argument as text; 400 ``bad_unicode`` when it is not
        UTF-8 (a percent-encoded surrogate is invalid UTF-8) or holds a NUL, as a body
        holding one is."""
        where = name or "the URL"
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest(
                f"'{where}' is not valid UTF-8 ({value[:40]!r}): send valid Unicode",
                reason="bad_unicode",
            ) from None
        if "\x00" in text:  # no store takes it (PostgreSQL refuses NUL in text)
            raise BadRequest(
                f"'{where}' holds a NUL character (\\u0000): send text without it",
                reason="bad_unicode",
            )
        return text

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """A refused request is one warning line, not a traceback: its message is kept
        for the access line (:func:`one_line_refusals`), which then says it all."""
        if isinstance(value, RequestError):
            self._refusal = value.message
            return
        if isinstance(value, web.HTTPError) and 400 <= value.status_code < 500:
            # Jupyter's own refusals (auth, XSRF, tornado's 404/405): same, one line.
            message = value.log_message % value.args if value.log_message else None
            if value.status_code == 403 and self._unauthenticated():
                message = self._auth_message()
            self._refusal = str(message or value.reason or _phrase(value.status_code) or "")
            return
        super().log_exception(typ, value, tb)

    def _unauthenticated(self) -> bool:
        """Nobody was recognised (no valid token, no login cookie) on an allowed host: a
        403 then is about the token, whatever check raised it first (Jupyter's ``_xsrf``
        check runs before ``@web.authenticated``; the request is refused either way)."""
        if not hasattr(self, "_jupyter_current_user") or self.current_user is not None:
            return False
        check_host = getattr(self, "check_host", None)
        return check_host is None or bool(check_host())

    def _auth_message(self) -> str:
        header = self.request.headers.get("Authorization", "")
        given = header.split(" ", 1)[0].lower() in ("token", "bearer") or bool(
            self.get_query_argument("token", "")
        )
        if given:
            return "missing or invalid token: the token given was not accepted by this server"
        return (
            "missing or invalid token: none was given (send the server's token in an "
            "'Authorization: token T' header)"
        )

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Answer every error as ``{"message": str, "reason": str | null}`` JSON (see the
        module docstring for the status, message and reason of each kind)."""
        phrase = _phrase(status_code)
        message, reason = phrase or "Error", phrase
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info is not None else None
        if isinstance(exc, AgentError):
            status_code = error_status(type(exc))
            self.set_status(status_code)
            phrase = _phrase(status_code)
            message, reason = phrase or "Error", phrase
            if isinstance(exc, RequestError):
                message, reason = exc.message, exc.reason
            if isinstance(exc, (Unavailable, TooManyRequests)) and exc.retry_after_s is not None:
                self.set_header("Retry-After", str(max(1, round(exc.retry_after_s))))
        elif isinstance(exc, web.HTTPError):
            if exc.log_message:
                message = exc.log_message % exc.args if exc.args else exc.log_message
            reason = exc.reason or phrase
            if status_code == 403 and self._unauthenticated():
                message, reason = self._auth_message(), "auth"
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": reason}))


class AgentHandler(AgentBase, APIHandler):
    """Base of the agent's REST handlers.

    An ``APIHandler`` (a ``JupyterHandler``), so an unauthenticated request gets 403 JSON
    instead of a redirect to the login page, cross-origin checks apply, and a POST on a
    cookie session needs the ``_xsrf`` token.
    """

    #: The methods of this handler that read a body (:meth:`json_body`); every other one
    #: takes none. Set by each handler class that reads one.
    body_methods: ClassVar[frozenset[str]] = frozenset()

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        """Jupyter's checks, then the body's, once for every route: over
        ``max_body_bytes`` is 413 ``body_too_large``; a method that takes no body refuses
        a non-empty one unless it is ``{}`` (400 ``bad_json``, or ``unknown_field`` naming
        its fields). An unauthenticated request is left to ``@web.authenticated`` (403)."""
        await super().prepare()
        if self.current_user is None:
            return
        body = self.request.body or b""
        limit = self.agent.max_body_bytes
        if len(body) > limit:
            raise PayloadTooLarge(
                f"Request body of {len(body)} bytes is over the limit of {limit} bytes"
            )
        if self.request.method not in self.body_methods and body.strip():
            parse.only_keys(parse.json_object(body, limit=limit), (), reason="unknown_field")

    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object (:func:`parse.json_object`: 413 over
        ``JupyterAgent.max_body_bytes``, 400 ``bad_json``; empty is ``{}``)."""
        return parse.json_object(self.request.body or b"", limit=self.agent.max_body_bytes)

    def finish_json(self, value: Any, status: int = 200) -> None:
        """Answer ``value`` as JSON with ``status``."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(value))


def one_line_refusals(log_request: Callable[[Any], None] | None) -> Callable[[Any], None]:
    """The server's ``log_function`` with one change: an agent request refused with a
    message (a 4xx, see :meth:`AgentBase.log_exception`) is ONE warning line, the access
    line with the refusal's message appended, instead of two (a warning, then the access
    line). Every other request is logged by ``log_request`` (Jupyter's) unchanged."""

    def log(handler: Any) -> None:
        refusal = getattr(handler, "_refusal", None)
        if refusal is None:
            if log_request is not None:
                log_request(handler)
            return
        request = handler.request
        user = getattr(handler, "current_user", None)
        name = getattr(user, "username", "") if user else ""
        handler.log.warning(
            "%d %s %s (%s@%s) %.2fms: %s",
            handler.get_status(),
            request.method,
            request.path,
            name,
            request.remote_ip,
            1000.0 * request.request_time(),
            refusal,
        )

    return log
