"""``request_owner`` / ``request_is_admin`` and the ``auto`` mode, on stand-in handlers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider, User

from jupyter_agent.exceptions import Forbidden
from jupyter_agent.server.auth.owners import owners_mode, request_is_admin, request_owner
from tests.plugins.identities import TokenUsersIdentityProvider


class _Grants:
    def __init__(self, allowed: bool) -> None:
        self.allowed, self.asked = allowed, []  # type: ignore[var-annotated]

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((action, resource))
        return self.allowed


def _handler(name: str, *, mode: str, provider: Any, admins: list[str], grant: bool) -> Any:
    app = SimpleNamespace(owners=mode, admin_users=admins)
    return SimpleNamespace(
        extensionapp=app,
        current_user=User(username=name) if name else SimpleNamespace(username=""),
        identity_provider=provider,
        authorizer=_Grants(grant),
    )


def test_auto_is_single_under_jupyter_servers_own_providers() -> None:
    assert owners_mode("auto", IdentityProvider()) == "single"
    assert owners_mode("auto", PasswordIdentityProvider()) == "single"
    assert owners_mode("auto", TokenUsersIdentityProvider()) == "identity"
    assert owners_mode("identity", IdentityProvider()) == "identity"
    assert owners_mode("single", TokenUsersIdentityProvider()) == "single"


def test_request_owner() -> None:
    ours = TokenUsersIdentityProvider()
    assert (
        request_owner(_handler("ann", mode="auto", provider=ours, admins=[], grant=True)) == "ann"
    )
    base = IdentityProvider()
    assert (
        request_owner(_handler("anon-x", mode="auto", provider=base, admins=[], grant=True)) == ""
    )
    with pytest.raises(Forbidden) as info:
        request_owner(_handler("", mode="identity", provider=ours, admins=[], grant=True))
    assert info.value.reason == "no_identity"


async def test_an_admin_is_listed_and_granted() -> None:
    ours = TokenUsersIdentityProvider()
    listed = _handler("carol", mode="auto", provider=ours, admins=["carol"], grant=True)
    assert await request_is_admin(listed)
    assert listed.authorizer.asked == [("read", "agent_admin")]
    assert not await request_is_admin(
        _handler("carol", mode="auto", provider=ours, admins=["carol"], grant=False)
    )
    assert not await request_is_admin(
        _handler("bob", mode="auto", provider=ours, admins=["carol"], grant=True)
    )


@pytest.mark.parametrize("grant", [True, False])
async def test_an_async_authorizers_answer_is_awaited(grant: bool) -> None:
    class _Async:
        def __init__(self) -> None:
            self.asked: list[tuple[str, str]] = []

        async def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
            self.asked.append((action, resource))
            return grant

    handler = _handler(
        "carol",
        mode="identity",
        provider=TokenUsersIdentityProvider(),
        admins=["carol"],
        grant=True,
    )
    handler.authorizer = _Async()
    assert await request_is_admin(handler) is grant
    assert handler.authorizer.asked == [("read", "agent_admin")]
