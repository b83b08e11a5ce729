"""Typing with inline completion on vs off (issue 29, item 1): the longest main-thread task
in the browser while 200 characters are typed into a notebook cell.

Not a test: ``python bench/bench_typing.py [--chars 200] [--rounds 3]``. A real ``jupyter
lab`` (the browser tests' :class:`~tests.browser.lab.LabServer`) with the agent on a
loopback fake provider; Debian's chromium types into a cell at 30 ms a key while a
``PerformanceObserver`` records long tasks (over 50 ms, as Lighthouse counts them). Rounds
alternate between the agent's provider enabled (JupyterLab's inline completer settings)
and disabled. Prints, per setting, the longest task, the number of long tasks and the
completions asked. Goal: no task over 50 ms with completion on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import nbformat
from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS, LabServer, open_lab

SETTINGS = "@jupyterlab/completer-extension:inline-completer"
TEXT = "result = compute_total(values, weights) + offset  # a running total of the week\n"
_OBSERVE = """() => {
  window.__long = [];
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) window.__long.push(e.duration);
  }).observe({type: 'longtask', buffered: false});
}"""


def _set_enabled(page: Page, enabled: bool) -> None:
    raw = json.dumps({"providers": {"jupyter-agent": {"enabled": enabled}}})
    page.evaluate(
        "async ([id, raw]) => { await window.jupyterapp.serviceManager.settings.save(id, raw); }",
        [SETTINGS, raw],
    )
    page.reload()
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started !== undefined")
    page.wait_for_timeout(3000)


def _round(page: Page, chars: int) -> list[float]:
    page.evaluate(
        "p => { window.jupyterapp.commands.execute('docmanager:open',"
        " {path: p, factory: 'Notebook'}); }",
        "typing.ipynb",
    )
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").first
    cell.wait_for(timeout=60000)
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.evaluate(_OBSERVE)
    text = (TEXT * (chars // len(TEXT) + 1))[:chars]
    editor.press_sequentially(text, delay=30)
    page.wait_for_timeout(1000)
    return list(page.evaluate("() => window.__long"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    found: dict[str, list[float]] = {"on": [], "off": []}
    asked = {"on": 0, "off": 0}
    with tempfile.TemporaryDirectory() as tmp, FakeProvider([]) as fake:
        fake.load({"steps": [{"text": "sum(values)"}], "repeat": True})
        lab = LabServer(Path(tmp), codegen_base_url=fake.base_url)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("")]
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, lab.root / "typing.ipynb")
        lab.start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                open_lab(page, lab)
                for i in range(args.rounds * 2):
                    setting = "on" if i % 2 == 0 else "off"
                    _set_enabled(page, setting == "on")
                    before = len(fake.requests)
                    found[setting] += _round(page, args.chars)
                    asked[setting] += len(fake.requests) - before
                browser.close()
        finally:
            lab.stop()
    print(f"typing {args.chars} characters, {args.rounds} rounds each:")
    for setting in ("on", "off"):
        tasks = found[setting]
        longest = max(tasks) if tasks else 0.0
        print(f"  completion {setting:3}: longest task {longest:6.1f} ms, {len(tasks)} tasks over "
              f"50 ms, {asked[setting]} completions asked")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
