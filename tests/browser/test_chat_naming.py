"""A chat is named after its first turn (issue 30, item 10), seen in a real lab: with a
``classify`` tier, the chat's tab and the sidebar take the model's name; the stored title
is whole and the panel shows it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=180)

FIRST = "Plot a sine wave and tell me its maximum"


@pytest.fixture(scope="module")
def namer() -> Iterator[FakeProvider]:
    with FakeProvider([{"text": "Sine wave maximum"}]) as provider:
        yield provider


@pytest.fixture(scope="module")
def lab(
    fake: FakeProvider, namer: FakeProvider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    server = LabServer(
        tmp_path_factory.mktemp("lab"),
        codegen_base_url=fake.base_url,
        classify_base_url=namer.base_url,
    )
    server.start()
    yield server
    server.stop()


def test_the_chat_takes_the_models_name(
    page: Page, fake: FakeProvider, namer: FakeProvider
) -> None:
    fake.load([{"text": "Its maximum is 1.0."}])
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, FIRST)
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=60000)
    tab = page.locator(f'.lm-TabBar-tab[data-id="jp-agent-chat-tab-{chat_id}"]')
    expect(tab).to_contain_text("Sine wave maximum", timeout=30000)
    sidebar = page.locator(".jp-agent-chat-open", has_text="Sine wave maximum")
    expect(sidebar).to_have_count(1, timeout=30000)
    assert len(namer.requests) == 1
    assert FIRST in str(namer.requests[0].json["messages"])
    shot(page, "chat-named")
