"""Slash commands in the composer (issue 29, item 3), in a real lab: the popup lists and
completes them, each one works, an unknown one sends nothing and says so, and a message
that starts with ``//`` is sent with one ``/`` less."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=180)

SLOW_CELL = "import time\nfor _ in range(600):\n    time.sleep(0.1)"


def test_the_popup_lists_and_completes_commands(page: Page) -> None:
    view = new_chat(page)
    box = view.locator(".jp-agent-input")
    box.click()
    box.press_sequentially("/")
    popup = view.locator(".jp-agent-slash")
    expect(popup).to_be_visible()
    names = popup.locator(".jp-agent-slash-name")
    expect(names).to_have_text(
        ["/new", "/stop", "/stop!", "/export", "/memory", "/model", "/fork", "/help"]
    )
    box.press_sequentially("st")
    expect(names).to_have_text(["/stop", "/stop!"])
    shot(page, "slash-popup")
    box.press("ArrowDown")
    expect(popup.locator(".jp-mod-selected")).to_have_text(
        "/stop!" + "stop the running turn at once (hard stop)"
    )
    box.press("Tab")
    expect(box).to_have_value("/stop!")
    expect(popup).to_be_hidden()
    box.fill("")
    expect(popup).to_be_hidden()


def test_help_model_and_an_unknown_command_send_nothing(page: Page, fake: FakeProvider) -> None:
    fake.load([])
    before = len(fake.requests)
    view = new_chat(page)
    send_message(view, "/help")
    note = view.locator(".jp-agent-note")
    expect(note).to_contain_text("/export: export this chat as a notebook and open it")
    expect(view.locator(".jp-agent-input")).to_have_value("")
    send_message(view, "/model")
    expect(note).to_contain_text("claude-sonnet-4-5 (fake, the codegen tier of the agent agent)")
    send_message(view, "/fly me to the moon")
    error = view.locator(".jp-agent-error")
    expect(error).to_have_text("Unknown command /fly: nothing was sent. /help lists the commands.")
    expect(view.locator(".jp-agent-input")).to_have_value("/fly me to the moon")  # kept
    send_message(view, "/stop")
    expect(note).to_have_text("No turn is running: nothing to stop.")
    assert len(fake.requests) == before  # nothing reached the model
    expect(view.locator(".jp-agent-user")).to_have_count(0)


def test_stop_export_new_and_a_double_slash(page: Page, fake: FakeProvider) -> None:
    fake.load([{"text": "This takes a while.", "cells": [SLOW_CELL]}, {"text": "never reached"}])
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "//tmp/data.csv is my file")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    expect(view.locator(".jp-agent-user").first).to_contain_text("/tmp/data.csv is my file")
    assert "//tmp" not in str(fake.requests[-1].json)
    send_message(view, "/stop!")
    expect(view.locator(".jp-agent-end")).to_have_text("Stopped now (hard stop)", timeout=30000)
    send_message(view, "/export")
    page.wait_for_function(
        "() => (window.jupyterapp.shell.currentWidget?.context?.path || '')"
        ".startsWith('agent-traces/')",
        timeout=30000,
    )
    page.evaluate(f"() => window.jupyterapp.shell.activateById('jp-agent-chat-tab-{chat_id}')")
    chats = page.locator(".jp-agent-chat")
    count = chats.count()
    send_message(view, "/new")
    expect(chats).to_have_count(count + 1, timeout=30000)
    shot(page, "slash-new-chat")


def test_model_switches_this_chat_and_back(page: Page, fake: FakeProvider) -> None:
    """``/model NAME`` makes the chat's next turn ask for NAME; ``/model default`` goes
    back; a name the server refuses is said, with the model unchanged."""
    fake.load([{"text": "One."}, {"text": "Two."}])
    view = new_chat(page)
    note = view.locator(".jp-agent-note")
    send_message(view, "/model claude-opus-4-1")
    expect(note).to_contain_text("From the next turn on: This chat answers with claude-opus-4-1")
    send_message(view, "hello")
    expect(view.locator(".jp-agent-reply").last).to_contain_text("One.", timeout=60000)
    assert fake.requests[-1].json["model"] == "claude-opus-4-1"
    send_message(view, "/model two words")
    expect(note).to_contain_text("The model was not changed: ")
    expect(note).to_contain_text("no spaces")
    send_message(view, "/model")
    expect(note).to_contain_text("answers with claude-opus-4-1, its own choice")
    send_message(view, "/model default")
    expect(note).to_contain_text("the codegen tier of the agent agent")
    send_message(view, "again")
    expect(view.locator(".jp-agent-reply").last).to_contain_text("Two.", timeout=60000)
    assert fake.requests[-1].json["model"] == "claude-sonnet-4-5"
    # /fork N takes its argument: the fork holds the first turn only.
    expect(view.locator(".jp-agent-end")).to_have_count(2, timeout=60000)
    send_message(view, "/fork 1")
    fork = page.locator(".jp-agent-origin").locator(
        "xpath=ancestor::*[starts-with(@id, 'jp-agent-chat-')][1]"
    )
    expect(fork.locator(".jp-agent-origin")).to_contain_text("at turn 1", timeout=30000)
    expect(fork.locator(".jp-agent-user")).to_have_count(1, timeout=30000)
    expect(fork.locator(".jp-agent-user")).to_contain_text("hello")
