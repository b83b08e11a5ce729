"""Live cell output and stopped cells in the panel, in a real browser against a real
``jupyter lab`` and the fake provider (one lab server and browser for the module)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    browser_marks,
    new_chat,
    send_message,
    shot,
    wait_restored,
)

pytestmark = browser_marks(timeout_s=180)


TICKING = "import time\nfor i in range(5):\n    print('live-tick', i)\n    time.sleep(1)\n"
STOPPABLE = (
    "import time\nprint('printed-before-the-stop')\nfor _ in range(600):\n    time.sleep(0.1)\n"
)


def test_live_output_shows_while_the_cell_runs(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Counting slowly.", "cells": [TICKING]},
            {"expect": {"last_user_contains": "live-tick 4"}, "text": "Counted."},
        ]
    )
    view = new_chat(page)
    send_message(view, "Count slowly")
    running = view.locator(".jp-agent-cell.jp-mod-running")
    expect(running).to_have_count(1, timeout=60000)
    expect(running.locator(".jp-agent-cell-status")).to_have_text("running…")
    # Shown in the cell that still runs: before its end.
    expect(running.locator(".jp-OutputArea-output")).to_contain_text("live-tick 1", timeout=30000)
    shot(page, "live-output-running")
    cell = view.locator(".jp-agent-cell").first
    expect(view.locator(".jp-agent-reply")).to_contain_text("Counted.", timeout=60000)
    expect(cell).not_to_have_class(re.compile(r"\bjp-mod-running\b"))
    expect(cell.locator(".jp-agent-cell-status")).to_contain_text("ok")
    text = cell.locator(".jp-OutputArea").inner_text()
    for i in range(5):
        assert text.count(f"live-tick {i}") == 1, text  # the final outputs replaced the live


def test_a_hard_stopped_cell_shows_cancelled_with_its_output_after_a_reload(
    page: Page, fake: FakeProvider
) -> None:
    fake.load([{"text": "Looping.", "cells": [STOPPABLE]}, {"text": "never reached"}])
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "Loop for a minute")
    running = view.locator(".jp-agent-cell.jp-mod-running")
    expect(running.locator(".jp-OutputArea-output")).to_contain_text(
        "printed-before-the-stop", timeout=60000
    )
    stop = view.locator(".jp-agent-stop")
    stop.click()  # soft: the cell would not reach the next step for a minute
    expect(stop).to_have_text("Stop now")
    stop.click()  # hard: at once
    expect(view.locator(".jp-agent-end")).to_have_text("Stopped now (hard stop)", timeout=30000)
    cell = view.locator(".jp-agent-cell").first
    expect(cell.locator(".jp-agent-cell-status")).to_contain_text("cancelled")
    expect(cell).to_have_class(re.compile(r"\bjp-mod-cancelled\b"))
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("printed-before-the-stop")
    shot(page, "cancelled-cell")

    page.reload()
    wait_restored(page)
    restored = page.locator(f"#jp-agent-chat-{chat_id}")
    if restored.count() == 0 or not restored.is_visible():
        page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
    again = restored.locator(".jp-agent-cell").first
    expect(again.locator(".jp-agent-cell-status")).to_contain_text("cancelled", timeout=30000)
    expect(again.locator(".jp-OutputArea-output")).to_contain_text("printed-before-the-stop")
    expect(restored.locator(".jp-agent-end")).to_have_text("Stopped now (hard stop)")
    shot(page, "cancelled-cell-reloaded")
