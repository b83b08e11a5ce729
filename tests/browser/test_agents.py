"""Several agents in the panel, in a real browser against a real ``jupyter lab``: the lab
hosts the default agent and ``reviewer`` (the ``agents`` trait, its own ``_soul.md`` in a
folder of the data dir), the fake provider answers.

New chat asks which agent (the default preselected, then the last pick); the chat list
names a chat's agent when it is not the default; each turn's footer names the agent that
answered (its ``fromAgent``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, send_message, shot

pytestmark = browser_marks(timeout_s=180)

REVIEWER_SOUL = "You are Reviewer: you read code and say what could break.\n"


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab-agents"), codegen_base_url=fake.base_url)
    space = server.dirs["data"] / "reviewer-space"
    space.mkdir()
    (space / "_soul.md").write_text(REVIEWER_SOUL, encoding="utf-8")
    config_file = server.dirs["config"] / "jupyter_server_config.json"
    config = json.loads(config_file.read_text())
    config["JupyterAgent"]["pool_size"] = 0
    config["JupyterAgent"]["agents"] = {
        "reviewer": {"space": str(space), "description": "Reviews code"}
    }
    config_file.write_text(json.dumps(config))
    server.start()
    yield server
    server.stop()


def start_chat(page: Page, agent_line: str | None) -> Locator:
    """New chat from the sidebar; pick ``agent_line`` in the dialog (None: keep the
    preselected one); the new chat view's locator."""
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:open-panel')")
    before = page.locator(".jp-agent-chat").count()
    page.locator(".jp-agent-new-chat").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Which agent answers this chat?")
    if agent_line is not None:
        dialog.locator("select").select_option(label=agent_line)
    dialog.get_by_role("button", name="Start chat").click()
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-agent-chat').length > n", arg=before
    )
    view = page.locator(".jp-agent-chat:visible").last
    view.locator(".jp-agent-connection[data-state='open']").wait_for()
    return view


def test_pick_an_agent_for_a_new_chat_and_the_footer_names_it(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    fake.load({"steps": [{"text": "Looks fine to me."}], "repeat": True})
    view = start_chat(page, "reviewer — Reviews code")
    send_message(view, "please review my notebook")
    expect(view.locator(".jp-agent-reply")).to_contain_text("Looks fine", timeout=60000)
    footer = view.locator(".jp-agent-turn-footer").first
    expect(footer.locator(".jp-agent-from")).to_have_text("answered by reviewer")
    # The server agrees: the chat is reviewer's, and so is its turn.
    chats = lab.get("agent/chats").json()["chats"]
    [chat] = [c for c in chats if c["agent"] == "reviewer"]
    [turn] = lab.get(f"agent/chats/{chat['id']}").json()["turns"]
    assert turn["fromAgent"] == "reviewer"
    # The chat list names the agent of a chat that is not the default one.
    item = page.locator(f".jp-agent-chat-item[data-chat-id='{chat['id']}']")
    expect(item.locator(".jp-agent-chat-agent")).to_have_text("reviewer")
    shot(page, "agents-reviewer")

    # The last pick is preselected next time; the default agent's chat says "agent".
    page.locator(".jp-agent-new-chat").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.locator("select")).to_have_value("reviewer — Reviews code")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    other = start_chat(page, "agent")
    send_message(other, "hello")
    expect(other.locator(".jp-agent-reply")).to_contain_text("Looks fine", timeout=60000)
    expect(other.locator(".jp-agent-turn-footer .jp-agent-from")).to_have_text("answered by agent")
    chats = lab.get("agent/chats").json()["chats"]
    default = [c for c in chats if c["agent"] == "agent"]
    assert len(default) == 1
    item = page.locator(f".jp-agent-chat-item[data-chat-id='{default[0]['id']}']")
    expect(item).to_be_visible()
    expect(item.locator(".jp-agent-chat-agent")).to_have_count(0)
    errors: list[str] = page.console_errors  # type: ignore[attr-defined]
    assert [e for e in errors if "agent" in e.lower()] == []
