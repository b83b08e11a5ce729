"""Fork from a turn and edit-and-resend (issue 31, item 1), in a real lab and Debian chromium.

A chat of two turns: "Fork from here" on the first opens a new chat holding that turn only,
with a line saying where it came from (the original keeps both); "Edit and resend" on the
second asks for the edited message and opens a chat holding the first turn and the edited
message's answer.
"""

from __future__ import annotations

import json

from playwright.sync_api import Locator, Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=180)


def _new_view(page: Page, before: list[str]) -> Locator:
    """The chat view that opened since ``before`` (the ids of the views there were)."""
    found = page.wait_for_function(
        """ids => {
          const v = [...document.querySelectorAll('.jp-agent-chat')]
            .find(e => e.id && !ids.includes(e.id) && e.getClientRects().length > 0);
          return v ? v.id : null;
        }""",
        arg=before,
        timeout=30000,
    )
    return page.locator(f"#{found.json_value()}")


def _views(page: Page) -> list[str]:
    return list(page.eval_on_selector_all(".jp-agent-chat", "els => els.map(e => e.id)"))


def test_fork_from_a_turn_and_edit_and_resend(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    view = new_chat(page)
    send_message(view, "remember alpha")
    expect(view.locator(".jp-agent-end")).to_have_count(1, timeout=60000)
    send_message(view, "remember bravo")
    expect(view.locator(".jp-agent-end")).to_have_count(2, timeout=60000)
    # Fork from the first turn.
    before = _views(page)
    view.locator(".jp-agent-run").first.locator(".jp-agent-fork").click()
    fork = _new_view(page, before)
    expect(fork.locator(".jp-agent-origin")).to_contain_text("at turn 1", timeout=30000)
    expect(fork.locator(".jp-agent-user")).to_have_count(1, timeout=30000)
    expect(fork.locator(".jp-agent-user")).to_contain_text("remember alpha")
    shot(page, "fork-from-turn-1")
    # Back in the original: both turns are there; edit and resend its second message.
    page.evaluate(
        "id => window.jupyterapp.shell.activateById(id)",
        f"jp-agent-chat-tab-{view.get_attribute('id').removeprefix('jp-agent-chat-')}",
    )
    expect(view.locator(".jp-agent-user")).to_have_count(2)
    before = _views(page)
    view.locator(".jp-agent-run").nth(1).locator(".jp-agent-edit-resend").click()
    dialog = page.locator(".jp-Dialog")
    field = dialog.locator("input")
    expect(field).to_have_value("remember bravo")
    field.fill("remember bravissimo")
    dialog.locator(".jp-mod-accept").click()
    edited = _new_view(page, before)
    expect(edited.locator(".jp-agent-user")).to_have_count(2, timeout=60000)
    expect(edited.locator(".jp-agent-user").nth(1)).to_contain_text("remember bravissimo")
    expect(edited.locator(".jp-agent-end")).to_have_count(2, timeout=60000)
    shot(page, "edit-and-resend")
    assert lab.get("agent/chats").json()["chats"][0]["forked_from"]["turn"] == 1


def test_rerun_a_turn_and_see_the_diff(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    """ "Re-run…" on a turn: its recorded inputs go to another model; once it ends the two
    runs open side by side, the other model named where they part; the chat is unchanged."""
    fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    view = new_chat(page)
    send_message(view, "remember charlie")
    expect(view.locator(".jp-agent-end")).to_have_count(1, timeout=60000)
    view.locator(".jp-agent-run").first.locator(".jp-agent-rerun").click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator("input").fill("claude-opus-4-1")
    dialog.locator(".jp-mod-accept").click()
    diff = page.locator(".jp-agent-run-diff")
    expect(diff).to_be_visible(timeout=60000)
    expect(diff.locator(".jp-agent-diff-where")).to_contain_text("They first part at effect")
    expect(diff.locator(".jp-agent-diff-totals")).to_contain_text("claude-opus-4-1")
    expect(diff.locator(".jp-agent-diff-totals tr.jp-mod-changed").first).to_contain_text("model")
    shot(page, "rerun-diff")
    assert fake.requests[-1].json["model"] == "claude-opus-4-1"
    expect(view.locator(".jp-agent-user")).to_have_count(1)  # not a turn of this chat


def test_continue_an_exported_chat(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    """Export a chat, then "Agent: Continue This Exported Chat" on the export: a new chat
    holds its turn, and the next message's prompt has it as history."""
    fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    view = new_chat(page)
    send_message(view, "remember delta")
    expect(view.locator(".jp-agent-end")).to_have_count(1, timeout=60000)
    view.locator(".jp-agent-input").click()
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:export-chat')")
    export = page.locator(".jp-NotebookPanel:visible")
    expect(export).to_contain_text("remember delta", timeout=60000)
    before = _views(page)
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:import-chat')")
    imported = _new_view(page, before)
    expect(imported.locator(".jp-agent-user")).to_have_count(1, timeout=30000)
    expect(imported.locator(".jp-agent-user")).to_contain_text("remember delta")
    send_message(imported, "what did I ask you to remember?")
    expect(imported.locator(".jp-agent-end")).to_have_count(2, timeout=60000)
    assert "remember delta" in json.dumps(fake.requests[-1].json["messages"])
    titles = [c["title"] for c in lab.get("agent/chats").json()["chats"]]
    assert any(t.startswith("Imported: ") for t in titles), titles
