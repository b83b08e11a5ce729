"""Cell actions (issue 29, item 2), in a real lab and Debian chromium: a cell fails; Fix in
its context menu opens the notebook's chat with the view naming the cell; the agent (the
fake model) reads the notebook and proposes a replacement; Apply turns it into a cell that
runs. Explain goes to the same chat (one per notebook); Fix is not offered on a cell that
did not fail."""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, shot

pytestmark = browser_marks(timeout_s=240)

NOTEBOOK = "broken.ipynb"
BROKEN = "total = prices_sum + 1\nprint(total)"
FIXED = "prices_sum = 41\ntotal = prices_sum + 1\nprint('total', total)"
PROPOSE = (
    "nb = notebook.read()\n"
    "target = nb.cells[0]['id']\n"
    "pid = notebook.propose(nb.path, [{'op': 'replace', 'cell_id': target,\n"
    f"    'source': {FIXED!r}, 'reason': 'define prices_sum first'}}])\n"
    "print('proposed', pid)\n"
)


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(BROKEN, id="broken-cell")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, server.root / NOTEBOOK)
    server.start()
    yield server
    server.stop()


def _menu_items(page: Page) -> list[str]:
    return [t.strip() for t in page.locator(".lm-Menu-itemLabel:visible").all_text_contents()]


def test_fix_a_failing_cell_then_apply(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    page.evaluate(
        "p => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'})",
        NOTEBOOK,
    )
    panel = page.locator(".jp-NotebookPanel:visible")
    cell = panel.locator(".jp-Cell").first
    expect(cell).to_be_visible(timeout=60000)
    cell.locator(".jp-InputArea-prompt").click()
    cell.locator(".jp-InputArea-prompt").click(button="right")
    assert "Fix this cell (agent)" not in _menu_items(page)  # nothing failed yet
    assert "Explain this cell (agent)" in _menu_items(page)
    page.keyboard.press("Escape")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("NameError", timeout=60000)
    fake.load(
        [
            {
                "expect": {"last_user_contains": "broken-cell"},
                "text": "Let me look at the traceback.",
                "cells": [PROPOSE],
            },
            {"expect": {"last_user_contains": "proposed p"}, "text": "I proposed a fix."},
        ]
    )
    cell.locator(".jp-InputArea-prompt").click(button="right")
    page.locator(".lm-Menu-item:visible", has_text="Fix this cell (agent)").click()
    view = page.locator(".jp-agent-chat:visible")
    expect(view.locator(".jp-agent-user").first).to_contain_text("Cell 0 of my notebook fails")
    card = view.locator(".jp-agent-proposal")
    expect(card).to_have_attribute("data-status", "pending", timeout=60000)
    expect(view.locator(".jp-agent-reply")).to_contain_text("I proposed a fix.", timeout=60000)
    expect(card.locator(".jp-agent-diff-add").first).to_have_text("+prices_sum = 41")
    shot(page, "cell-fix-proposal")
    card.locator(".jp-agent-apply").click()
    expect(card).to_have_attribute("data-status", "applied", timeout=30000)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    # The fixed cell runs.
    page.evaluate(
        """path => {
          const w = [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context && w.context.path === path);
          window.jupyterapp.shell.activateById(w.id);
        }""",
        NOTEBOOK,
    )
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").first
    expect(cell.locator(".cm-content")).to_contain_text("prices_sum = 41", timeout=30000)
    cell.locator(".jp-InputArea-prompt").click()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
    expect(cell.locator(".jp-OutputArea-output")).to_have_text("total 42", timeout=60000)
    # Explain goes to the same chat: one per notebook.
    fake.load([{"text": "It adds one."}])
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:explain-cell')")
    same = page.locator(f"#jp-agent-chat-{chat_id}")
    expect(same.locator(".jp-agent-user")).to_have_count(2, timeout=60000)
    expect(same.locator(".jp-agent-user").last).to_contain_text("Explain cell 0")
    expect(same.locator(".jp-agent-reply").last).to_contain_text("It adds one.", timeout=60000)
