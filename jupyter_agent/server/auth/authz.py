"""The one way the agent asks Jupyter's authorizer: awaited, as ``@authorized`` does it.

jupyter_server 2.x lets an ``Authorizer.is_authorized`` be a coroutine function; its own
``@authorized`` decorator awaits the answer (``jupyter_core.utils.ensure_async``). A check
written as ``if authorizer.is_authorized(...)`` would take the unawaited coroutine for a
yes, so every check of the agent that is not the decorator itself -- the MCP endpoint and
each of its tools' permissions, the events socket, deleting a chat whose turn is running,
the admin check -- goes through :func:`is_authorized` (a yes/no) or :func:`require` (403
as the decorator refuses: a tornado ``HTTPError`` whose log message is the answer's
``message``).

Like the decorator, a request without a user is refused without asking the authorizer.
"""

from __future__ import annotations

from typing import Any

from jupyter_core.utils import ensure_async
from tornado import web

__all__ = ["is_authorized", "require"]


async def is_authorized(handler: Any, action: str, resource: str) -> bool:
    """True when the server's authorizer grants ``action`` on ``resource`` to the user of
    the request ``handler`` serves (sync or async authorizer alike); False without a user
    or an authorizer."""
    user = getattr(handler, "current_user", None)
    authorizer = getattr(handler, "authorizer", None)
    if not user or authorizer is None:
        return False
    answer = await ensure_async(authorizer.is_authorized(handler, user, action, resource))
    return bool(answer)


async def require(handler: Any, action: str, resource: str, message: str | None = None) -> None:
    """Return when :func:`is_authorized`; else raise 403 as ``@authorized`` does (its
    default message unless ``message`` is given)."""
    if not await is_authorized(handler, action, resource):
        text = message or f"User is not authorized to {action} on resource: {resource}."
        raise web.HTTPError(403, text)
