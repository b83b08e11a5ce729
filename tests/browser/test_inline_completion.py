"""Inline completion (issue 29, item 1), in a real lab and Debian chromium: typing in a
notebook cell shows the agent's suggestion as ghost text (the fake model's scripted
completion); Tab accepts it into the cell. The request carried the cells around."""

from __future__ import annotations

import json
from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, shot

pytestmark = browser_marks(timeout_s=180)

NOTEBOOK = "complete-me.ipynb"


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("values = [1, 2, 3]", id="above"),
        nbformat.v4.new_code_cell("", id="here"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, server.root / NOTEBOOK)
    server.start()
    yield server
    server.stop()


def test_ghost_text_then_tab_accepts(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    fake.load({"steps": [{"text": "sum(values)"}], "repeat": True})
    page.evaluate(
        "p => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'})",
        NOTEBOOK,
    )
    panel = page.locator(".jp-NotebookPanel:visible")
    cell = panel.locator(".jp-Cell").nth(1)
    expect(cell).to_be_visible(timeout=60000)
    editor = cell.locator(".cm-content")
    editor.click()
    editor.press_sequentially("total = ", delay=40)
    ghost = cell.locator(".jp-GhostText")
    expect(ghost).to_have_text("sum(values)", timeout=30000)
    shot(page, "inline-completion")
    editor.press("Tab")
    expect(editor).to_have_text("total = sum(values)")
    expect(ghost).to_have_count(0)
    sent = json.dumps([r.json for r in fake.requests])
    assert "values = [1, 2, 3]" in sent
    assert "total = <CURSOR>" in sent


def test_typing_on_cancels_the_request(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    """A suggestion asked for, then more typed before it came: the browser aborts the
    request and the server closes the model's stream (the fake sees its client gone)."""
    fake.load({"steps": [{"text": "too late", "delay_s": 4}], "repeat": True})
    gone = fake.went_away
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    editor.press_sequentially("other = ", delay=40)
    page.wait_for_timeout(900)  # past the debounce: the request is in flight
    asked = len(fake.requests)
    assert asked >= 1
    editor.press_sequentially("max(", delay=40)
    for _ in range(60):  # up to 6 s: the aborted request's stream closes well before 4 s
        if fake.went_away > gone:
            break
        page.wait_for_timeout(100)
    assert fake.went_away > gone, "the first request's model stream stayed open"
    expect(cell.locator(".jp-GhostText")).to_have_count(0)
