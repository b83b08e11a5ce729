"""The agent's kernels stay out of the person's way (issue 30, item 9), in a real lab.

- The Launcher has no "Python (agent)" card, though the kernelspec is installed (a trace's
  cells still run in it when the person runs one).
- The Running panel lists the person's kernels only, with the agent's warm pool up; its
  "Shut Down All" during an agent cell ends the person's kernels and not the turn.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import LabServer, browser_marks, new_chat, send_message, shot

pytestmark = browser_marks(timeout_s=180)

AGENT_CARD = '.jp-LauncherCard[title="Python (agent)"]'
# Long enough to click through the Running panel, short enough not to slow the suite.
SLOW = "import time\nfor i in range(40):\n    time.sleep(0.1)\nprint('survived')"


def _status_kernels(lab: LabServer) -> dict[str, int]:
    answer = lab.get("agent/status")
    answer.raise_for_status()
    kernels: dict[str, int] = answer.json()["kernels"]
    return kernels


def test_the_launcher_has_no_agent_card(page: Page, lab: LabServer) -> None:
    specs = lab.get("api/kernelspecs").json()["kernelspecs"]
    assert "jupyter-agent" in specs  # installed: the card is hidden, not missing
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    launcher = page.locator(".jp-Launcher-body:visible")
    expect(launcher.locator(".jp-LauncherCard").first).to_be_visible(timeout=30000)
    python3 = specs["python3"]["spec"]["display_name"]
    expect(launcher.locator(f'.jp-LauncherCard[title="{python3}"]').first).to_be_visible()
    cards = launcher.locator(AGENT_CARD)
    assert cards.count() >= 1  # JupyterLab made the cards (notebook, console) ...
    for index in range(cards.count()):
        expect(cards.nth(index)).to_be_hidden()  # ... and the person never sees them
    shot(page, "launcher-without-agent-card")
    page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")


def test_shut_down_all_spares_the_agents_turn(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    fake.load([{"text": "Working.", "cells": [SLOW]}, {"text": "Done."}])
    answer = lab.request("POST", "api/kernels", {"name": "python3"})  # the person's kernel
    assert answer.status_code == 201, answer.text
    mine = answer.json()["id"]
    view = new_chat(page)
    send_message(view, "Run the slow one")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    kernels = _status_kernels(lab)
    assert kernels["in_use"] >= 1  # the turn's kernel, in no Jupyter listing
    # JupyterLab polls the kernel list; the person's REST-started kernel shows at once.
    page.evaluate("() => window.jupyterapp.serviceManager.kernels.refreshRunning()")
    page.evaluate("() => window.jupyterapp.commands.execute('running:show-panel')")
    panel = page.locator("#jp-running-sessions")
    expect(panel).to_be_visible(timeout=30000)
    title = panel.locator('h3[aria-label="Kernels Section"]')
    section = panel.locator(f'[id="{title.get_attribute("aria-controls")}"]')
    expect(section).to_contain_text(mine[:8], timeout=30000)  # "No sessions connected (id)"
    shot(page, "running-panel-person-kernels-only")
    listed = lab.get("api/kernels").json()
    assert [k["id"] for k in listed] == [mine]
    assert "Python (agent)" not in section.inner_text()
    title.locator(".jp-RunningSessions-shutdownAll").click()
    page.locator(".jp-Dialog-button.jp-mod-warn").click()
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=60000)
    assert lab.get("api/kernels").json() == []
    cell = view.locator(".jp-agent-cell").first
    expect(cell).to_contain_text("survived")
    shot(page, "shut-down-all-spared-the-turn")
