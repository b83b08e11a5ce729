"""``@`` mentions in the composer (issue 29, item 5), in a real lab and Debian chromium.

The person runs ``df = ...`` in a notebook, then in a chat types ``@d``: the popup lists the
kernel's ``df`` with its summary (``GET agent/variables``), Tab puts ``@df`` in the text;
``@cell:`` lists the notebook's cells; ``@data/`` lists a folder's files and picking one
attaches it. The message the model gets lists the mentioned cell and variable (with the
summary) and carries the attached file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, new_chat, shot

pytestmark = browser_marks(timeout_s=240)

NOTEBOOK = "mentions.ipynb"
PERSON = "import pandas as pd\ndf = pd.DataFrame({'a': range(4), 'b': list('wxyz')})"


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PERSON, id="person-df")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, server.root / NOTEBOOK)
    (server.root / "data").mkdir()
    (server.root / "data" / "sales.csv").write_text("region,total\nnorth,10\n")
    server.start()
    yield server
    server.stop()


def test_mention_a_variable_a_cell_and_a_file(
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
    fake.load([{"text": "Compared."}])
    # The server sees the kernel idle a moment after the cell's reply (till then a look is
    # refused at once as busy, and the popup lists no variable).
    deadline = time.monotonic() + 30
    while lab.get(f"agent/variables?path={NOTEBOOK}").status_code != 200:
        assert time.monotonic() < deadline, "the person's kernel never went idle"
        time.sleep(0.2)
    view = new_chat(page)
    box = view.locator(".jp-agent-input")
    popup = view.locator(".jp-agent-slash")
    box.click()
    box.press_sequentially("compare @d")
    first = popup.locator(".jp-agent-mention-item").first
    expect(first.locator(".jp-agent-slash-name")).to_have_text("@df", timeout=30000)
    expect(first.locator(".jp-agent-slash-help")).to_contain_text("DataFrame 4 x 2")
    shot(page, "mention-popup")
    box.press("Tab")
    expect(box).to_have_value("compare @df ")
    box.press_sequentially("with @cell:")
    expect(popup.locator(".jp-agent-slash-name")).to_have_text(["@cell:0"])
    box.press("Enter")
    expect(box).to_have_value("compare @df with @cell:0 ")
    box.press_sequentially("and @data")
    expect(popup.locator(".jp-agent-slash-name").first).to_have_text("@data/")
    box.press("Tab")  # a folder: its entries
    expect(box).to_have_value("compare @df with @cell:0 and @data/")
    expect(popup.locator(".jp-agent-slash-name")).to_have_text(["@data/sales.csv"])
    box.press("Tab")
    expect(view.locator(".jp-agent-chip")).to_contain_text("data/sales.csv")
    # A send the server refuses (the attached file went away) loses nothing: the text,
    # the attachment and the mentions come back, and the next send carries them all.
    sales = lab.root / "data" / "sales.csv"
    sales.rename(sales.with_suffix(".gone"))
    box.press("Enter")
    expect(view.locator(".jp-agent-error").first).to_contain_text("Could not send", timeout=30000)
    expect(box).to_have_value("compare @df with @cell:0 and @data/sales.csv")
    expect(view.locator(".jp-agent-chip")).to_contain_text("data/sales.csv")
    sales.with_suffix(".gone").rename(sales)
    box.press("Enter")
    expect(view.locator(".jp-agent-reply").last).to_contain_text("Compared.", timeout=60000)
    prompt = json.dumps(fake.requests[-1].json["messages"])
    assert "compare @df with @cell:0 and @data/sales.csv" in prompt
    assert "- cell 0 (id `person-df`) of `mentions.ipynb`" in prompt
    assert "- `df`, a variable of the person's kernel: DataFrame 4 x 2" in prompt
    assert "region,total" in prompt  # the file went as an attachment
