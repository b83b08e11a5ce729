"""A test identity provider: several named users on one Jupyter server, by token.

``TokenUsersIdentityProvider.users = {token: username}``: a request whose header is
``Authorization: token T`` with ``T`` in the dict is that user; any other request is
authenticated as jupyter_server's base class does it (the server's own token). A subclass
of ``IdentityProvider``, so ``JupyterAgent.owners = "auto"`` resolves it to ``identity``.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import Dict, Unicode


class TokenUsersIdentityProvider(IdentityProvider):  # type: ignore[misc]
    """Maps ``Authorization: token T`` to ``users[T]`` (see the module docstring)."""

    users = Dict(
        key_trait=Unicode(), value_trait=Unicode(), default_value={}, help="token -> username"
    ).tag(config=True)

    def get_user(self, handler: Any) -> Any:
        header = str(handler.request.headers.get("Authorization", ""))
        scheme, _, token = header.partition(" ")
        name = self.users.get(token.strip()) if scheme.lower() == "token" else None
        if name is not None:
            handler._token_authenticated = True  # a token, not a cookie: no XSRF check
            return User(username=name, name=name, display_name=name)
        return super().get_user(handler)


def identity_server_config(agent: dict[str, Any], tokens: dict[str, str]) -> dict[str, Any]:
    """A ``jp_server_config`` with the agent (``JupyterAgent`` = ``agent``) and this
    provider, ``tokens`` being ``{username: token}``.

    Several owners with unsandboxed kernels start only with ``allow_unsandboxed_owners``
    (set unless ``agent`` says otherwise): these servers test the agent's own scoping
    (REST, socket, MCP); what model code can read is ``tests/server/test_isolation.py``'s.
    """
    agent = {"allow_unsandboxed_owners": True, **agent}
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_agent": True},
            "identity_provider_class": "tests.plugins.identities.TokenUsersIdentityProvider",
        },
        "TokenUsersIdentityProvider": {"users": {t: n for n, t in tokens.items()}},
        "JupyterAgent": agent,
    }
