"""The agent edits the person's notebook, in a real browser against a real ``jupyter lab``
(with jupyter-collaboration: the open notebook is a shared document) and the fake provider.

The module's lab runs with ``approval = "every_cell"``: each cell the agent runs waits for
the person's Approve. The chain: a notebook open on screen; the agent's cell (approved)
calls ``notebook.read()`` and proposes a replace of the active cell; the panel shows the
diff; Apply changes the cell on screen; Undo restores it; after a reload the card comes
back with its outcome. A denied cell never runs and the model is told.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Locator, Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    LabServer,
    browser_marks,
    new_chat,
    send_message,
    shot,
    wait_restored,
)

pytestmark = browser_marks(timeout_s=240)

NOTEBOOK = "edit-me.ipynb"
OLD = "x = 1\nprint(x)"
NEW = "x = 42\nprint('the answer', x)"

#: The agent's cell: read the viewed notebook, propose a replace of the cell the person
#: is on (the view's `cell_id`, which the cell finds as the first cell's id).
PROPOSE = (
    "nb = notebook.read()\n"
    "target = nb.cells[0]['id']\n"
    "pid = notebook.propose(nb.path, [{'op': 'replace', 'cell_id': target,\n"
    f"    'source': {NEW!r}, 'reason': 'use the answer'}}])\n"
    "print('proposed', pid, 'on', nb.path)\n"
)


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The module's lab: the shared one's config plus ``approval = "every_cell"``."""
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    config = server.dirs["config"] / "jupyter_server_config.json"
    data = json.loads(config.read_text())
    data["JupyterAgent"]["approval"] = "every_cell"
    config.write_text(json.dumps(data))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(OLD, id="cell-one"),
        nbformat.v4.new_markdown_cell("# keep me", id="cell-two"),
    ]
    # A kernelspec: no kernel-choice dialog over the notebook.
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, server.root / NOTEBOOK)
    server.start()
    yield server
    server.stop()


def _open_notebook(page: Page) -> Locator:
    page.evaluate(
        "p => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'})",
        NOTEBOOK,
    )
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel.locator(".jp-Cell")).to_have_count(2, timeout=60000)
    # The person is on the first cell: the view sends its index and id.
    panel.locator(".jp-Cell").first.locator(".jp-InputArea-prompt").click()
    return panel


def _pinned(view: Locator) -> Locator:
    """The chat view by its id: ``new_chat``'s "last visible chat" may resolve to
    another chat later, once the tabs restored by a reload are in the page too."""
    return view.page.locator(f"#{view.get_attribute('id')}")


def _cell_source(page: Page, index: int) -> str:
    """The source of a cell of the open notebook as its model (the screen) holds it."""
    return str(
        page.evaluate(
            """([path, i]) => {
              const w = [...window.jupyterapp.shell.widgets('main')]
                .find(w => w.context && w.context.path === path);
              return w ? w.content.model.cells.get(i).sharedModel.getSource() : null;
            }""",
            [NOTEBOOK, index],
        )
    )


def _show_notebook(page: Page) -> Locator:
    page.evaluate(
        """path => {
          const w = [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context && w.context.path === path);
          window.jupyterapp.shell.activateById(w.id);
        }""",
        NOTEBOOK,
    )
    return page.locator(".jp-NotebookPanel:visible .jp-Cell").first.locator(".cm-content")


def _show_chat(page: Page, chat_id: str) -> Locator:
    page.evaluate("id => window.jupyterapp.shell.activateById(`jp-agent-chat-tab-${id}`)", chat_id)
    return page.locator(f"#jp-agent-chat-{chat_id}")


def test_approve_then_apply_and_undo_a_proposal(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    fake.load(
        [
            {
                "expect": {"last_user_contains": "cell-one"},
                "text": "Let me read your notebook.",
                "cells": [PROPOSE],
            },
            {"expect": {"last_user_contains": "proposed p"}, "text": "I proposed a change."},
        ]
    )
    _open_notebook(page)
    view = _pinned(new_chat(page))
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "Use the answer in my first cell")

    # every_cell: the cell waits for the person.
    approval = view.locator(".jp-agent-approval[data-state='open']")
    expect(approval).to_have_count(1, timeout=60000)
    expect(approval.locator(".jp-agent-approval-code")).to_contain_text("notebook.propose")
    expect(view.locator(".jp-agent-cell")).to_have_count(0)
    shot(page, "notebook-edits-approval")
    approval.locator(".jp-agent-approve").click()
    closed = view.locator(".jp-agent-approval[data-state='closed']")
    expect(closed).to_have_count(1, timeout=30000)
    expect(closed.locator(".jp-agent-approval-header")).to_have_text("Approved")
    expect(closed.locator("button")).to_have_count(0)

    # The approved cell ran and proposed; nothing changed yet.
    card = view.locator(".jp-agent-proposal")
    expect(card).to_have_attribute("data-status", "pending", timeout=60000)
    expect(view.locator(".jp-agent-reply")).to_contain_text("I proposed a change.", timeout=60000)
    expect(card.locator(".jp-agent-proposal-title")).to_contain_text(NOTEBOOK)
    edit = card.locator(".jp-agent-edit")
    expect(edit).to_have_count(1)
    expect(edit).to_have_attribute("data-cell-id", "cell-one")
    expect(edit.locator(".jp-agent-edit-op")).to_have_text("replace")
    expect(edit.locator(".jp-agent-edit-reason")).to_have_text("use the answer")
    expect(edit.locator(".jp-agent-diff-del")).to_have_text(["-x = 1", "-print(x)"])
    expect(edit.locator(".jp-agent-diff-add")).to_have_text(["+x = 42", "+print('the answer', x)"])
    expect(edit.locator(".jp-agent-diff-hunk")).to_have_count(1)
    # One edit, all checked: "Apply selected" would be a plain Apply.
    expect(card.locator(".jp-agent-apply-selected")).to_be_disabled()
    assert _cell_source(page, 0) == OLD
    shot(page, "notebook-edits-proposal")

    card.locator(".jp-agent-apply").click()
    expect(card).to_have_attribute("data-status", "applied", timeout=30000)
    expect(card.locator(".jp-agent-proposal-outcome")).to_have_text(f"Applied to {NOTEBOOK}")
    expect(card.locator(".jp-agent-proposal-error")).to_have_count(0)
    # The shared model changed: the cell on screen shows the new source.
    page.wait_for_function(
        """([path, src]) => {
          const w = [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context && w.context.path === path);
          return w && w.content.model.cells.get(0).sharedModel.getSource() === src;
        }""",
        arg=[NOTEBOOK, NEW],
        timeout=30000,
    )
    assert _cell_source(page, 1) == "# keep me"
    editor = _show_notebook(page)
    expect(editor).to_contain_text("x = 42", timeout=10000)
    shot(page, "notebook-edits-applied")

    view = _show_chat(page, chat_id)
    card = view.locator(".jp-agent-proposal")
    card.locator(".jp-agent-undo").click()
    expect(card).to_have_attribute("data-status", "undone", timeout=30000)
    expect(card.locator(".jp-agent-undo")).to_have_count(0)
    page.wait_for_function(
        """([path, src]) => {
          const w = [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context && w.context.path === path);
          return w && w.content.model.cells.get(0).sharedModel.getSource() === src;
        }""",
        arg=[NOTEBOOK, OLD],
        timeout=30000,
    )
    editor = _show_notebook(page)
    expect(editor).to_contain_text("x = 1", timeout=10000)
    expect(editor).not_to_contain_text("42")
    shot(page, "notebook-edits-undone")

    # The server's record agrees, and a reload rebuilds the cards from it.
    rows = lab.get(f"agent/proposals?chat_id={chat_id}").json()["proposals"]
    assert [r["status"] for r in rows] == ["undone"]
    page.reload()
    wait_restored(page)
    restored = page.locator(f"#jp-agent-chat-{chat_id}")
    if restored.count() == 0 or not restored.is_visible():
        page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
    again = restored.locator(".jp-agent-proposal")
    expect(again).to_have_attribute("data-status", "undone", timeout=30000)
    expect(again.locator(".jp-agent-diff-add")).to_have_count(2)
    expect(again.locator(".jp-agent-proposal-outcome")).to_contain_text("Undone")
    expect(again.locator("button")).to_have_count(0)
    errors: list[str] = page.console_errors  # type: ignore[attr-defined]
    assert not [e for e in errors if "agent" in e.lower()], errors


def test_a_denied_cell_never_runs_and_the_model_is_told(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Deleting the data.", "cells": ["print('should-not-run')"]},
            {"expect": {"last_user_contains": "denied"}, "text": "Understood, I left it."},
        ]
    )
    view = _pinned(new_chat(page))
    send_message(view, "Clean up")
    approval = view.locator(".jp-agent-approval[data-state='open']")
    # A new chat: its kernel may have to start first.
    expect(approval).to_have_count(1, timeout=120000)
    expect(approval.locator(".jp-agent-approval-code")).to_contain_text("should-not-run")
    shot(page, "notebook-edits-deny")
    # (Seen once under load: the card's button reported not visible; show the tab again.)
    _show_chat(page, (view.get_attribute("id") or "").removeprefix("jp-agent-chat-"))
    approval.locator(".jp-agent-deny").click()
    expect(view.locator(".jp-agent-reply")).to_contain_text("Understood, I left it.", timeout=60000)
    closed = view.locator(".jp-agent-approval")
    expect(closed).to_have_attribute("data-state", "closed")
    expect(closed.locator(".jp-agent-approval-header")).to_have_text("Denied")
    expect(view.locator(".jp-agent-cell")).to_have_count(0)
    assert "should-not-run" not in (view.inner_text() or "").replace("print('should-not-run')", "")
    expect(view.locator(".jp-agent-end")).to_have_text(re.compile("Done"))
