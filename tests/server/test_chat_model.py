"""A chat's own model (issue 29, ``/model NAME``): ``PATCH agent/chats/{id}`` ``{model}``.

Through a real Jupyter Server and the fake provider (which records what each request asked
for): the chat answers with its agent's codegen tier, then with another ready tier by name,
then with another model of codegen's provider, then with codegen again; the run summaries
record the model that answered; a fork keeps the chat's model; bad names, an admin's
``allowed_models``, the demo model and a caller without ``execute`` are refused with nothing
stored.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from jupyter_server.auth import Authorizer

from tests.server.helpers import call, new_chat, refused, wait_turn

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    def tier(model: str) -> dict[str, Any]:
        return {"provider": "fake", "model": model, "base_url": fake.base_url}

    return {
        "pool_size": 0,
        "tiers": {"codegen": tier("claude-sonnet-4-5"), "classify": tier("claude-haiku-4-5")},
        "allowed_models": ["claude-*"],
    }


def _asked(fetch: Any, spin: Any, fake: Any, chat_id: str, text: str) -> tuple[str, str]:
    """Send ``text``; (the model the fake was asked for, the model the run records)."""
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    _, run = call(fetch, "agent", "runs", answer["run_id"])
    return str(fake.requests[-1].json["model"]), str(run["model"])


def _model(fetch: Any, chat_id: str, model: str | None) -> dict[str, Any]:
    code, chat = call(fetch, "agent", "chats", chat_id, method="PATCH", body={"model": model})
    assert code == 200
    return chat


def test_a_chat_answers_with_its_own_model(fetch: Any, spin: Any, fake: Any) -> None:
    chat_id = new_chat(fetch, "models")
    assert _asked(fetch, spin, fake, chat_id, "one") == ("claude-sonnet-4-5",) * 2
    # Another ready tier by name: its model answers.
    assert _model(fetch, chat_id, "classify")["model"] == "classify"
    assert _asked(fetch, spin, fake, chat_id, "two") == ("claude-haiku-4-5",) * 2
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["model"] == "classify"
    # Another model of codegen's provider (the admin allows claude-*).
    assert _model(fetch, chat_id, "  claude-opus-4-1 ")["model"] == "claude-opus-4-1"
    assert _asked(fetch, spin, fake, chat_id, "three") == ("claude-opus-4-1",) * 2
    # A fork keeps the chat's model.
    code, fork = call(fetch, "agent", "chats", chat_id, "fork", method="POST", body={"turn": 1})
    assert code == 201
    assert fork["model"] == "claude-opus-4-1"
    # null: the agent's codegen tier again; other chats never changed.
    assert _model(fetch, chat_id, None)["model"] is None
    assert _asked(fetch, spin, fake, chat_id, "four") == ("claude-sonnet-4-5",) * 2
    other = new_chat(fetch, "other")
    assert _asked(fetch, spin, fake, other, "five") == ("claude-sonnet-4-5",) * 2


def test_a_tier_profile_does_not_replace_the_chats_model(fetch: Any, spin: Any, fake: Any) -> None:
    # The person describes their classify tier's model (a profile in their settings): the
    # chat's own model still answers, and codegen's when the chat has none.
    classify = {"provider": "fake", "model": "claude-haiku-4-5", "base_url": fake.base_url}
    said = {"context_window": 32768, "max_output": 4096, "tool_mode": "native"}
    body = {"tiers": {"classify": {**classify, "profile": said}}}
    code, _ = call(fetch, "agent", "settings", method="PUT", body=body)
    assert code == 200
    chat_id = new_chat(fetch, "profiled")
    assert _asked(fetch, spin, fake, chat_id, "one") == ("claude-sonnet-4-5",) * 2
    _model(fetch, chat_id, "claude-opus-4-1")
    assert _asked(fetch, spin, fake, chat_id, "two") == ("claude-opus-4-1",) * 2


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "gpt-4o"}, "model not allowed"),
        ({"model": "two words"}, "no spaces"),
        ({"model": "x" * 201}, "1 to 200 characters"),
        ({"model": 3}, "string or null"),
        ({"model": "vision", "title": "t"}, "one at a time"),
    ],
)
def test_bad_models_are_refused_with_nothing_stored(
    fetch: Any, body: dict[str, Any], words: str
) -> None:
    chat_id = new_chat(fetch, "models")
    error = refused(fetch, "agent", "chats", chat_id, method="PATCH", body=body, status=400)
    assert words in error["message"]
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert (chat["model"], chat["title"]) == (None, "models")


def test_another_owners_chat_is_not_found(fetch: Any) -> None:
    refused(
        fetch, "agent", "chats", "chat_01NOSUCHCHAT0000000000000", method="PATCH",
        body={"model": "classify"}, status=404,
    )  # fmt: skip


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_the_demo_model_cannot_be_switched(fetch: Any) -> None:
    chat_id = new_chat(fetch, "demo")
    error = refused(
        fetch, "agent", "chats", chat_id, method="PATCH", body={"model": "x"}, status=400
    )
    assert error["reason"] == "bad_model"
    assert "demo model" in error["message"]


class NoExecute(Authorizer):  # type: ignore[misc]
    """Allows ``read`` and ``write``, never ``execute``."""

    asked: ClassVar[list[str]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action != "execute"


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": NoExecute,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_setting_a_model_needs_execute(fetch: Any) -> None:
    chat_id = new_chat(fetch, "models")
    refused(fetch, "agent", "chats", chat_id, method="PATCH", body={"model": "x"}, status=403)
    code, chat = call(fetch, "agent", "chats", chat_id, method="PATCH", body={"title": "still"})
    assert (code, chat["title"], chat["model"]) == (200, "still", None)


def test_embed_and_complete_are_no_chat_models(fetch: Any) -> None:
    chat_id = new_chat(fetch, "models")
    for name in ("embed", "complete"):
        error = refused(
            fetch, "agent", "chats", chat_id, method="PATCH", body={"model": name}, status=400
        )
        assert "not a chat model" in error["message"]
