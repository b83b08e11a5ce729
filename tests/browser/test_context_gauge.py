"""The context and cost gauge in a chat's header (issue 29, item 4), in a real lab: after a
turn it shows the last request's tokens against the model's context window and the chat's
cost; hovering gives the breakdown (the history the turn held, the ceilings); the cost grows
with the next turn."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=180)


def test_the_gauge_shows_tokens_and_cost_after_a_turn(page: Page, fake: FakeProvider) -> None:
    fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    view = new_chat(page)
    gauge = view.locator(".jp-agent-gauge")
    expect(gauge).to_be_hidden()
    send_message(view, "remember alpha")
    expect(view.locator(".jp-agent-end")).to_have_count(1, timeout=60000)
    expect(gauge).to_be_visible(timeout=30000)
    expect(gauge).to_have_text(re.compile(r"^\d[\d.]*k? / 200k tokens \(\d+%\) · \$0\.\d{4}$"))
    title = gauge.get_attribute("title") or ""
    assert "Last turn's model: claude-sonnet-4-5" in title
    assert "History held: 0 turns in full" in title
    assert "Each run's ceilings:" in title
    first = float((gauge.text_content() or "").rsplit("$", 1)[1])
    shot(page, "context-gauge")
    send_message(view, "remember bravo")
    expect(view.locator(".jp-agent-end")).to_have_count(2, timeout=60000)
    expect(gauge).not_to_have_text(re.compile(rf"\${first:.4f}$"), timeout=30000)
    second = float((gauge.text_content() or "").rsplit("$", 1)[1])
    assert second > first
    assert "History held: 1 turn in full" in (gauge.get_attribute("title") or "")
