"""The agent looks at the person's live kernel (issue 28), in a real lab and Debian chromium.

The person opens a notebook and runs ``df = pandas.DataFrame(...)`` in it; from the chat
panel (its view: that notebook) the agent's cell (fake model) calls
``notebook.variables()`` and draws a matplotlib figure. The model's next call reads the
frame's shape in the cell's result (the fake refuses the step otherwise); the chat shows
the variables, the figure and the reply; the person's kernel has no new name.
"""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=240)

NOTEBOOK = "person.ipynb"
PERSON = "import pandas as pd\ndf = pd.DataFrame({'a': range(5), 'b': list('vwxyz')})"
AGENT = (
    "print(notebook.variables())\n"
    "import matplotlib.pyplot as plt\n"
    "plt.plot([0, 1, 2], [0, 1, 4])\n"
    "plt.show()\n"
)


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    # The shared lab forces Agg; here the agent kernel plots with its real default backend.
    server.env.pop("MPLBACKEND", None)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PERSON, id="person-df")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, server.root / NOTEBOOK)
    server.start()
    yield server
    server.stop()


def test_the_agent_reads_the_persons_frame_and_plots(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    page.evaluate(
        "p => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'})",
        NOTEBOOK,
    )
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel.locator(".jp-Cell")).to_have_count(1, timeout=60000)
    panel.locator(".jp-Cell").first.locator(".jp-InputArea-prompt").click()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
    expect(panel.locator(".jp-Cell").first.locator(".jp-InputArea-prompt")).to_have_text(
        "[1]:", timeout=60000
    )
    fake.load(
        [
            {"text": "Looking at your kernel.", "cells": [AGENT]},
            {
                "expect": {"last_user_contains": "df: DataFrame = DataFrame 5 x 2 (a: int64"},
                "text": "Your `df` is 5 rows by 2 columns (a: int64, b: text).",
            },
        ]
    )
    view = new_chat(page)
    send_message(view, "What's in my df? And plot a parabola.")
    expect(view.locator(".jp-agent-reply").last).to_contain_text(
        "Your df is 5 rows by 2 columns", timeout=90000
    )
    cell = view.locator(".jp-agent-cell").first
    expect(cell).to_contain_text("df: DataFrame = DataFrame 5 x 2")
    img = cell.locator(".jp-OutputArea-output img").first
    expect(img).to_be_visible(timeout=30000)
    assert (img.get_attribute("src") or "").startswith("data:image/png;base64,")
    shot(page, "person-kernel-variables-and-figure")
    sessions = lab.get("api/sessions").json()
    assert [s["path"] for s in sessions] == [NOTEBOOK]  # the look started no kernel
