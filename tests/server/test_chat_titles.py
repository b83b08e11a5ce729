"""A chat's title is its first message's whole first line (issue 30, item 10): two chats
whose messages share their first words keep different titles, and no "…" is stored."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.runtime.runs.chat_service import MAX_TITLE, chat_title
from tests.server.helpers import call, new_chat

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("server_kernelspec")]


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Sure."}], "repeat": True})


@pytest.fixture
def jp_server_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "tiers": {"codegen": tier}},
    }


def test_titles_keep_the_whole_first_line(fetch: Any, agent_service: Any, jp_asyncio_loop: Any):
    texts = [
        "Plot a sine wave and tell me its maximum\nthen save it",
        "Plot a sine wave and tell me its minimum",
    ]
    ids = []
    for text in texts:
        chat_id = new_chat(fetch)
        code, sent = call(
            fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
        )
        assert code == 202
        jp_asyncio_loop.run_until_complete(agent_service.manager.wait(sent["run_id"]))
        ids.append(chat_id)
    titles = [call(fetch, "agent", "chats", i)[1]["title"] for i in ids]
    assert titles == [
        "Plot a sine wave and tell me its maximum",
        "Plot a sine wave and tell me its minimum",
    ]


def test_chat_title_rules():
    assert chat_title("\n\n  Load   the\tCSV  \nand more") == "Load the CSV"
    long = " ".join(["word"] * 80)  # 399 characters
    title = chat_title(long)
    assert len(title) <= MAX_TITLE
    assert title.endswith("word")  # cut at a word, not marked
    assert "…" not in title
    assert chat_title("x" * 500) == "x" * MAX_TITLE
