"""The client's transport: one server's address and token, and what each failure becomes.

Contracts:

- ``addr`` is the server's URL including its base URL (``http://host/user/someone/``);
  route paths are joined under it. Ids put in a path are percent-encoded. A URL as Jupyter
  prints it (``...?token=T``) works: its token is used when none is given, and dropped from
  the address.
- The token goes in the ``Authorization: token T`` header only (never in a URL), and
  never into an error message or a ``repr``.
- Every failure is a :class:`ClientError` (an :class:`~jupyter_agent.exceptions.AgentError`)
  with ``status`` (None when no HTTP answer came),
  ``message`` (one line for a person) and ``reason`` (the server's machine word):

  - no connection: ``cannot reach the agent server at ADDR`` (reason ``unreachable``);
  - no answer in ``timeout`` seconds: reason ``timeout``;
  - 403 with no token given: ``no token was given, and the server at ADDR needs one (403)``
    (reason ``no_token``);
  - 403 for a token without the permission the route needs: ``the server refused the
    request (403): User is not authorized to execute on resource: agent.`` (Jupyter's
    message; reason ``forbidden``);
  - 403 the agent answered itself (reason ``not_admin``: another owner's runs listed by
    a non-admin; ``no_identity``): ``the server refused the request (403): MESSAGE``
    (the server's reason);
  - any other 403: ``the server refused the token (403)`` (reason ``forbidden``);
  - 404 without a JSON body (no agent route there): ``not found: PATH (is the agent
    extension enabled?)`` (reason ``no_route``);
  - any other 4xx/5xx: the server's ``{message, reason}`` JSON, else ``HTTP <status>``.

- :meth:`~jupyter_agent.client.rest.AgentClient.events` is an async iterator over the chat's
  event WebSocket
  (:mod:`jupyter_agent.client.events`: ``websocket-client`` in a worker thread, because
  httpx has no WebSocket support and this module must not import tornado).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

import httpx

from jupyter_agent.exceptions import ClientError

__all__ = ["HttpClient", "normalise_addr", "seg"]

_Client = TypeVar("_Client", bound="HttpClient")

#: 403 reasons of the agent's own (the person is known; the action is not theirs).
_AGENT_REFUSALS = frozenset({"not_admin", "no_identity"})


def seg(value: str) -> str:
    """One path segment, percent-encoded (an id can never climb out of its route)."""
    return quote(str(value), safe="")


def normalise_addr(addr: str) -> tuple[str, str | None]:
    """``(base URL, token from the query)``: scheme added, a trailing slash, no query,
    fragment or user:password part (a pasted ``...?token=T`` URL gives its token)."""
    if not addr.startswith(("http://", "https://")):
        addr = "http://" + addr
    parts = urlsplit(addr)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    token = parse_qs(parts.query).get("token", [None])[0]
    return urlunsplit((parts.scheme, host, path, "", "")), token


class HttpClient:
    """One server's agent API over HTTP: the address, the token, the requests and what
    their failures become (the verbs are :class:`~jupyter_agent.client.rest.AgentClient`'s)."""

    def __init__(self, addr: str, token: str | None = None, *, timeout: float = 30) -> None:
        self._addr, query_token = normalise_addr(addr)
        self._shown = self._addr
        self._token = token or query_token
        token = self._token
        self._timeout = timeout
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"token {token}"
        self._http = httpx.Client(
            base_url=self._addr, headers=headers, timeout=timeout, follow_redirects=False
        )

    def __repr__(self) -> str:
        return f"AgentClient({self._shown!r})"

    def _failure(self, status: int | None, message: str, reason: str | None = None) -> ClientError:
        return ClientError(status, message, reason, addr=self._shown)

    @property
    def addr(self) -> str:
        """The server's URL (with a trailing slash)."""
        return self._shown

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- transport ---------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, json=body, params=clean or None)
        except httpx.TimeoutException:
            raise self._failure(
                None,
                f"the agent server at {self._shown} did not answer within {self._timeout:g} s",
                "timeout",
            ) from None
        except httpx.TransportError as exc:
            raise self._failure(
                None,
                f"cannot reach the agent server at {self._shown} ({type(exc).__name__})",
                "unreachable",
            ) from None
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _error(self, response: httpx.Response) -> ClientError:
        status = response.status_code
        message, reason = f"HTTP {status}", response.reason_phrase or None
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            if isinstance(data.get("message"), str) and data["message"]:
                message = data["message"]
            if isinstance(data.get("reason"), str):
                reason = data["reason"]
        if status == 403:
            agent_reason = reason if isinstance(data, dict) and "reason" in data else None
            return self._refused(message, agent_reason)
        if status == 404 and data is None:
            path = response.request.url.path
            return self._failure(
                404, f"not found: {path} (is the agent extension enabled?)", "no_route"
            )
        return self._failure(status, message, reason)

    def _refused(self, message: str, agent_reason: str | None = None) -> ClientError:
        """The 403 error: no token, a token without the permission, the agent's own
        refusal (``agent_reason``: ``not_admin``, ``no_identity``), or a refused token."""
        if agent_reason in _AGENT_REFUSALS:
            return self._failure(
                403, f"the server refused the request (403): {message}", agent_reason
            )
        if not self._token:
            needs = f"no token was given, and the server at {self._shown} needs one (403)"
            return self._failure(403, needs, "no_token")
        if message.startswith("User is not authorized"):  # jupyter_server's authorizer
            return self._failure(
                403, f"the server refused the request (403): {message}", "forbidden"
            )
        return self._failure(403, "the server refused the token (403)", "forbidden")

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        response = self._request(method, path, body=body, params=params)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise self._failure(
                response.status_code,
                f"the server's answer to {method} {path} is not JSON",
                "bad_answer",
            ) from None
