"""Who owns a request, and who is an admin: the one answer every agent route uses.

:func:`request_owner` is called by the REST handlers, the events socket and the MCP
endpoint alike; the service layer then scopes every chat, run, memory, proposal and
settings row by that owner (another owner's object answers 404, like a missing one).

``JupyterAgent.owners`` decides:

- ``single``: every request's owner is ``""``, the server's one user.
- ``identity``: the owner is the identity's ``username``; an identity with an empty name
  is refused (403 ``no_identity``).
- ``auto`` (default): ``single`` when the server's identity provider is one of
  jupyter_server's own classes (``IdentityProvider`` and the ``PasswordIdentityProvider``
  / ``LegacyIdentityProvider`` it configures by default: their token users are anonymous
  random names per browser cookie, so a ``curl`` with the token would be a new user on
  every request), else ``identity`` (JupyterHub's ``JupyterHubIdentityProvider`` or any
  other configured provider).

:func:`request_is_admin` (awaited): the identity's username is in
``JupyterAgent.admin_users`` AND the authorizer grants ``read`` on resource
:data:`ADMIN_RESOURCE` (asked through :mod:`.authz`, so a sync or an async authorizer alike).
An admin may read any owner's runs (support) and, with several owners, deploy programs;
nothing else.

Owner strings are stored as they are. Nothing here imports tornado at module level
beyond what handlers already have; a handler is duck-typed (``current_user``,
``identity_provider``, ``authorizer``, ``extensionapp``).
"""

from __future__ import annotations

from typing import Any, Final

from jupyter_server.auth.identity import (
    IdentityProvider,
    LegacyIdentityProvider,
    PasswordIdentityProvider,
)

from jupyter_agent.exceptions import Forbidden
from jupyter_agent.server.auth import authz

__all__ = [
    "ADMIN_RESOURCE",
    "ALL_OWNERS",
    "OWNER_MODES",
    "owners_mode",
    "request_is_admin",
    "request_owner",
    "username",
]

#: The authorization resource an admin must be granted ``read`` on.
ADMIN_RESOURCE: Final = "agent_admin"
#: The values of ``JupyterAgent.owners``.
OWNER_MODES: Final = ("auto", "identity", "single")
#: ``GET agent/runs?owner=*``: every owner's runs (admins only).
ALL_OWNERS: Final = "*"

# jupyter_server's own providers: anonymous per-cookie users, so one owner for all.
_SINGLE_USER_PROVIDERS: Final = frozenset(
    {IdentityProvider, PasswordIdentityProvider, LegacyIdentityProvider}
)


def owners_mode(mode: str, provider: Any) -> str:
    """``single`` or ``identity``: the trait's ``mode`` with ``auto`` resolved for the
    server's identity ``provider`` (see the module docstring)."""
    if mode != "auto":
        return mode
    return "single" if type(provider) in _SINGLE_USER_PROVIDERS else "identity"


def username(handler: Any) -> str:
    """The request identity's username (``""`` when there is none)."""
    user = getattr(handler, "current_user", None)
    name = getattr(user, "username", None)
    if name is None and isinstance(user, str):
        name = user
    return str(name or "")


def _app(handler: Any) -> Any:
    return getattr(handler, "extensionapp", None)


def request_owner(handler: Any) -> str:
    """The owner of the (authenticated) request ``handler`` serves.

    ``""`` in single-user mode; else the identity's username, 403 ``no_identity`` when it
    is empty.
    """
    app = _app(handler)
    mode = owners_mode(
        str(getattr(app, "owners", "auto")), getattr(handler, "identity_provider", None)
    )
    if mode == "single":
        return ""
    name = username(handler)
    if not name:
        raise Forbidden("the request has no identity to own agent objects", reason="no_identity")
    return name


async def request_is_admin(handler: Any) -> bool:
    """True when the identity is in ``admin_users`` and granted ``read`` on
    :data:`ADMIN_RESOURCE` by the server's authorizer (awaited: :func:`.authz.is_authorized`)."""
    app = _app(handler)
    name = username(handler)
    if not name or name not in list(getattr(app, "admin_users", []) or []):
        return False
    return await authz.is_authorized(handler, "read", ADMIN_RESOURCE)
