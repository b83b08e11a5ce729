"""Authorizers that deny everything, allow ``read`` only, allow all but ``execute``, or allow
all, each in a sync and an async form (jupyter_server 2.x awaits an ``async def
is_authorized``; issue 25: every check of the agent must too).

Each records what it was asked in :data:`ASKED` as ``(method, path, action, resource)``;
the async form records it when its coroutine runs, so a check that never awaited the
answer leaves no line. Configure one with :func:`authorizer_config`.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from jupyter_server.auth.authorizer import Authorizer

#: What every authorizer of this module was asked, in order.
ASKED: list[tuple[str, str, str, str]] = []


class _Policy(Authorizer):  # type: ignore[misc]
    #: The actions granted (None: every action).
    grants: ClassVar[frozenset[str] | None] = frozenset()
    policy: ClassVar[str] = "deny"
    form: ClassVar[str] = "sync"

    def answer(self, handler: Any, action: str, resource: str) -> bool:
        request = handler.request
        ASKED.append((request.method, request.path, action, resource))
        return self.grants is None or action in self.grants

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return self.answer(handler, action, resource)


class _Async:
    form: ClassVar[str] = "async"

    async def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        await asyncio.sleep(0)  # a real suspension: the answer exists only once awaited
        return self.answer(handler, action, resource)  # type: ignore[attr-defined,no-any-return]


class DenyAll(_Policy):
    grants = frozenset()
    policy = "deny"


class ReadOnly(_Policy):
    grants = frozenset({"read"})
    policy = "read"


class NoExecute(_Policy):
    grants = frozenset({"read", "write"})
    policy = "no_execute"


class AllowAll(_Policy):
    grants = None
    policy = "all"


class AsyncDenyAll(_Async, DenyAll):
    pass


class AsyncReadOnly(_Async, ReadOnly):
    pass


class AsyncNoExecute(_Async, NoExecute):
    pass


class AsyncAllowAll(_Async, AllowAll):
    pass


#: ``{policy: {form: class}}``.
AUTHORIZERS: dict[str, dict[str, type[_Policy]]] = {
    "deny": {"sync": DenyAll, "async": AsyncDenyAll},
    "read": {"sync": ReadOnly, "async": AsyncReadOnly},
    "no_execute": {"sync": NoExecute, "async": AsyncNoExecute},
    "all": {"sync": AllowAll, "async": AsyncAllowAll},
}


def authorizer_config(cls: type[Authorizer], agent: dict[str, Any]) -> dict[str, Any]:
    """A ``jp_server_config`` with the extension, ``JupyterAgent`` = ``agent`` and the
    authorizer ``cls`` (``ServerApp.authorizer_class``)."""
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}, "authorizer_class": cls},
        "JupyterAgent": agent,
    }


def install(serverapp: Any, cls: type[Authorizer]) -> Authorizer:
    """Make an instance of ``cls`` the running server's authorizer, built as ``ServerApp``
    builds the configured one (the handlers read it from the web app's settings)."""
    authorizer = cls(
        parent=serverapp, log=serverapp.log, identity_provider=serverapp.identity_provider
    )
    serverapp.authorizer = authorizer
    serverapp.web_app.settings["authorizer"] = authorizer
    return authorizer
