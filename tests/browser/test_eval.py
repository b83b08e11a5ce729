"""Evaluate from the panel (issue 31, item 4), in a real lab and Debian chromium.

The shipped suite (``examples/eval``) sits in the lab's root. Right-clicking it in the
file browser offers "Evaluate with the Agent"; the notification follows the eval to "4 of 4
case runs passed" and opens the report notebook. The palette's "Agent: Evaluate this
notebook's cases" runs the open notebook's cases, and a failure is named in the
notification.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, shot

pytestmark = browser_marks(timeout_s=240)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval"


@pytest.fixture(scope="module")
def lab(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"), codegen_base_url=fake.base_url)
    shutil.copytree(EXAMPLE, server.root / "suite", ignore=shutil.ignore_patterns("monthly.csv"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def scripted(fake: FakeProvider) -> FakeProvider:
    fake.load(json.loads((EXAMPLE / "fake-script.json").read_text()))
    return fake


def test_evaluate_a_folder_from_the_file_browser(
    page: Page, scripted: FakeProvider, lab: LabServer
) -> None:
    page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")
    item = page.locator('.jp-DirListing-item[data-isdir="true"]', has_text="suite")
    expect(item).to_be_visible(timeout=30000)
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel:visible", has_text="Evaluate with the Agent").click()
    toast = page.locator(".Toastify__toast", has_text="Eval of suite: 4 of 4 case runs passed")
    expect(toast).to_be_visible(timeout=120000)
    shot(page, "eval-done")
    toast.get_by_role("button", name="Open the report").click()
    report = page.locator(".jp-NotebookPanel:visible")
    expect(report).to_contain_text("4 of 4 case runs passed", timeout=30000)
    expect(report).to_contain_text("monthly-file")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_evaluate_the_open_notebook_names_a_failure(
    page: Page, scripted: FakeProvider, lab: LabServer
) -> None:
    nb = nbformat.read(lab.root / "suite" / "cases.ipynb", as_version=4)
    nb.cells = nb.cells[:3]  # the title and the first case
    nb.cells[2].source = "assert total == 1, 'total is not 1'"
    nbformat.write(nb, lab.root / "one.ipynb")
    shutil.copy(lab.root / "suite" / "sales.csv", lab.root / "sales.csv")
    page.evaluate(
        "p => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'})",
        "one.ipynb",
    )
    expect(page.locator(".jp-NotebookPanel:visible .jp-Cell").first).to_be_visible(timeout=60000)
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:eval-notebook')")
    toast = page.locator(".Toastify__toast", has_text="Eval of one.ipynb: 0 of 1 case runs passed")
    expect(toast).to_be_visible(timeout=120000)
    expect(toast).to_contain_text("first failure: total-revenue: AssertionError: total is not 1")
