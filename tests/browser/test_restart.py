"""A chat survives a server restart: the panel rebuilds it from the REST records and each
run's steps (``GET agent/chats/{id}``, ``GET agent/runs/{id}``), never from a notebook.

One lab server whose process is stopped and started again on the same data dir and port;
the page reloads and must show the chat exactly as before (the chat view's text).

And a chat survives its events socket dropping while more runs end than the server keeps
(``EventBus.tail_bytes``): the reconnection's ``gap`` frame makes the panel read them.
"""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    LabServer,
    browser_marks,
    new_chat,
    open_lab,
    send_message,
    shot,
)

pytestmark = browser_marks(timeout_s=240)

SLEEPY = "import time\ntime.sleep(3)\nprint('slept')"
STOPPABLE = (
    "import time\nprint('printed-before-the-stop')\nfor _ in range(600):\n    time.sleep(0.1)\n"
)


def chat_text(view: Locator) -> dict[str, object]:
    """What the chat view shows: its messages' text, and each cell's digest."""
    return {
        "text": view.locator(".jp-agent-messages").inner_text(),
        "digests": view.locator(".jp-agent-digest").all_text_contents(),
    }


def test_a_chat_renders_the_same_after_a_server_restart(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    fake.load(
        [
            {"text": "Working on it.", "cells": [SLEEPY]},
            {"expect": {"last_user_contains": "also say hi"}, "text": "Hi! **Done** as asked."},
            {"text": "Looping.", "cells": [STOPPABLE]},
            {"text": "never reached"},
        ]
    )
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    # Turn 1: a cell, and a steering message sent while it runs.
    send_message(view, "Sleep a bit")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    send_message(view, "also say hi")
    expect(view.locator(".jp-agent-reply")).to_contain_text("Done as asked.", timeout=60000)
    expect(view.locator(".jp-agent-steering .jp-agent-label")).to_have_text("You · steering")
    # Turn 2: stopped at once (hard) while its cell runs.
    send_message(view, "Loop for a minute")
    running = view.locator(".jp-agent-cell.jp-mod-running")
    expect(running.locator(".jp-OutputArea-output")).to_contain_text(
        "printed-before-the-stop", timeout=60000
    )
    stop = view.locator(".jp-agent-stop")
    stop.click()
    expect(stop).to_have_text("Stop now")
    stop.click()
    expect(view.locator(".jp-agent-end")).to_have_count(2, timeout=30000)
    expect(view.locator(".jp-agent-end").last).to_have_text("Stopped now (hard stop)")
    expect(view.locator(".jp-agent-cell").last).to_have_class(re.compile(r"\bjp-mod-cancelled\b"))
    before = chat_text(view)
    assert "also say hi" in str(before["text"])
    shot(page, "restart-before")

    lab.stop()
    lab.start()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    # Load the page again, with the token: the new server process has a new cookie secret.
    open_lab(page, lab)
    restored = page.locator(f"#jp-agent-chat-{chat_id}")
    if restored.count() == 0 or not restored.is_visible():
        page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
    expect(restored.locator(".jp-agent-end")).to_have_count(2, timeout=30000)
    # Rebuilt from the steps: wait for them (never for a fixed time), then compare.
    page.wait_for_function(
        "([id, text]) => document.querySelector(`#jp-agent-chat-${id} .jp-agent-messages`)"
        "?.innerText === text",
        arg=[chat_id, before["text"]],
        timeout=30000,
    )
    shot(page, "restart-after")
    assert chat_text(restored) == before
    assert [u for u in requests if "/agent/runs/" in u and "full=1" in u]  # from the steps
    assert [u for u in requests if re.search(r"/notebook(\?|$)", u)] == []


def test_a_reconnection_after_a_gap_shows_the_runs_that_ended_meanwhile(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    # Each events socket goes through this route: forwarded while `up`, else cut.
    up, sockets = [True], []

    def route(ws: WebSocketRoute) -> None:
        if not up[0]:
            ws.close()
            return
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/agent/chats/[^/]+/events"), route)
    open_lab(page, lab)  # the panel's sockets opened again, through the route
    fake.load({"steps": [{"text": "Reply number one."}], "repeat": True})
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "first")
    expect(view.locator(".jp-agent-reply")).to_have_count(1, timeout=30000)

    up[0] = False
    for ws in sockets:
        ws.close()
    expect(view.locator(".jp-agent-connection")).not_to_have_attribute("data-state", "open")
    # More ended runs than the 16 KiB the server keeps of them (over 3 KB each). Each
    # message has its reply whatever else asks the model meanwhile (the summary of the
    # chat's first ten turns, made in the background as the tenth ends): a turn plays the
    # route its message names, per turn, so no call uses up another's step (the summary
    # plays a route its transcript names, or the default step).
    texts = [f"Reply {i} while away." for i in range(2, 12)]
    routes = [
        {"when": f"away-{i:02d}", "steps": [{"text": text + " More words." * 200}]}
        for i, text in enumerate(texts, start=2)
    ]
    fake.load({"per_turn": True, "routes": routes, "steps": [{"text": "A summary."}]})
    for i in range(2, 12):
        message = {"text": f"away-{i:02d}"}
        run_id = lab.request("POST", f"agent/chats/{chat_id}/messages", message)
        assert run_id.status_code == 202, run_id.text
        _wait_idle(lab, chat_id)
    up[0] = True
    view.locator(".jp-agent-connection[data-state='open']").wait_for(timeout=30000)
    # The kept events alone would show only the newest runs: the gap made it read them all.
    expect(view.locator(".jp-agent-reply")).to_have_count(11, timeout=30000)
    replies = view.locator(".jp-agent-reply").all_inner_texts()
    assert [r.split(" More")[0].strip() for r in replies] == ["Reply number one.", *texts]
    page.unroute_all()


def _wait_idle(lab: LabServer, chat_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        chat: dict[str, Any] = lab.get(f"agent/chats/{chat_id}").json()
        if chat.get("active_run_id") is None:
            return
        time.sleep(0.05)
    raise AssertionError("the run did not end")
