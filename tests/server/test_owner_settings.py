"""Settings per owner (issue 19): one person's tier changes never change another's.

Two identities on one real Jupyter server (the token-users identity provider, so
``owners = "auto"`` is ``identity``). alice overrides codegen from the browser's route; bob
still gets the admin's tiers in ``agent/settings``, ``agent/status`` and his runs (real runs:
the model each one asked the fake provider for is the one it was configured with).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.identities import identity_server_config
from tests.server.helpers import call
from tests.server.test_owners import TOKENS, _as, _chat, _send, _wait

pytestmark = pytest.mark.timeout(240)

ADMIN_MODEL = "claude-sonnet-4-5"
ALICE_MODEL = "claude-haiku-4-5"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Hello."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": ADMIN_MODEL, "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    return identity_server_config(agent_config, TOKENS)


def _settings(fetch: Any, who: str) -> dict[str, Any]:
    code, settings = call(fetch, "agent", "settings", headers=_as(who))
    assert code == 200
    return dict(settings)


def _status(fetch: Any, who: str) -> dict[str, Any]:
    code, status = call(fetch, "agent", "status", headers=_as(who))
    assert code == 200
    return dict(status)


def _run_model(fetch: Any, spin: Any, fake: Any, who: str) -> str:
    """The model ``who``'s next run asked the provider for."""
    chat_id = _chat(fetch, who, f"{who}'s chat")
    before = len(fake.requests)
    run_id = _send(fetch, who, chat_id, "hello")
    turn = _wait(fetch, spin, who, chat_id, run_id)
    assert turn["replies"][-1]["text"] == "Hello.", turn
    models = {r.json.get("model") for r in fake.requests[before:]}
    assert len(models) == 1, models
    return str(models.pop())


def test_one_owners_tiers_never_change_anothers(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    mine = {"provider": "fake", "model": ALICE_MODEL, "base_url": fake.base_url}
    code, settings = call(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body={"tiers": {"codegen": mine}},
        headers=_as("alice"),
    )
    assert code == 200
    assert settings["tiers"]["codegen"]["model"] == ALICE_MODEL
    assert settings["overridden"] == ["codegen"]

    bobs = _settings(fetch, "bob")
    assert bobs["tiers"]["codegen"]["model"] == ADMIN_MODEL
    assert bobs["overridden"] == []
    assert _status(fetch, "bob")["tiers"]["codegen"]["model"] == ADMIN_MODEL
    assert _status(fetch, "alice")["tiers"]["codegen"]["model"] == ALICE_MODEL
    # Stored under her name only (not as the server's user, "").
    assert agent_service.store.owner_tiers("alice") == {"codegen": mine}
    assert agent_service.store.owner_tiers("bob") is None
    assert agent_service.store.owner_tiers("") is None

    # The runs use each owner's tiers.
    assert _run_model(fetch, spin, fake, "alice") == ALICE_MODEL
    assert _run_model(fetch, spin, fake, "bob") == ADMIN_MODEL

    # bob reverting "his" codegen override touches nothing of alice's.
    code, _ = call(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body={"tiers": {"codegen": None}},
        headers=_as("bob"),
    )
    assert code == 200
    assert _settings(fetch, "alice")["overridden"] == ["codegen"]
    assert _run_model(fetch, spin, fake, "alice") == ALICE_MODEL

    # alice's revert brings the admin's tier back for her.
    call(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body={"tiers": {"codegen": None}},
        headers=_as("alice"),
    )
    assert _settings(fetch, "alice")["overridden"] == []
    assert _run_model(fetch, spin, fake, "alice") == ADMIN_MODEL
