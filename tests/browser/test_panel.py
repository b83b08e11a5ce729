"""The chat panel in a real browser against a real ``jupyter lab`` and the fake provider.

One lab server and one browser per module; each test loads its own script into the fake
provider. Screenshots of the chat view go to ``test-artifacts/browser/`` (printed).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from playwright.sync_api import Page, expect

import jupyter_agent
from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    LabServer,
    browser_marks,
    new_chat,
    open_lab,
    send_message,
    shot,
    wait_restored,
)

pytestmark = browser_marks(timeout_s=180)


def agent_errors(page: Page) -> list[str]:
    """Console errors that come from the agent panel (JupyterLab's own are not ours)."""
    errors: list[str] = page.console_errors  # type: ignore[attr-defined]
    return [e for e in errors if "agent" in e.lower()]


SLOW_CELL = "import time\nfor _ in range(600):\n    time.sleep(0.1)"

PNG_CELL = (
    "import io\n"
    "import matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\n"
    "from IPython.display import Image, display\n"
    "fig, ax = plt.subplots(figsize=(3, 2))\n"
    "ax.plot([1, 2, 3], [1, 4, 9])\n"
    "buf = io.BytesIO()\n"
    "fig.savefig(buf, format='png')\n"
    "display(Image(buf.getvalue()))\n"
)


def test_send_shows_cell_output_and_reply(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Let me compute.", "cells": ["print(6 * 7)"]},
            {"expect": {"last_user_contains": "42"}, "text": "The answer is **42**."},
        ]
    )
    view = new_chat(page)
    expect(view.locator(".jp-agent-demo-badge")).to_be_hidden()  # a real tier is set
    send_message(view, "What is 6 times 7?")
    expect(view.locator(".jp-agent-user").first).to_contain_text("What is 6 times 7?")
    cell = view.locator(".jp-agent-cell").first
    expect(cell.locator(".jp-agent-code")).to_contain_text("print(6 * 7)", timeout=60000)
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("42", timeout=60000)
    expect(view.locator(".jp-agent-bubble").first).to_contain_text("Let me compute.")
    reply = view.locator(".jp-agent-reply")
    expect(reply).to_contain_text("The answer is 42", timeout=60000)
    expect(reply.locator("strong")).to_have_text("42")  # rendered as markdown
    footer = view.locator(".jp-agent-turn-footer").first
    expect(footer.locator(".jp-agent-end")).to_have_text("Done")
    expect(footer.locator(".jp-agent-stats")).to_contain_text("claude-sonnet-4-5")
    expect(footer.locator(".jp-agent-stats")).to_contain_text("1 cell")
    # The digest (what the model saw) is one click away.
    digest = cell.locator(".jp-agent-digest")
    expect(digest).to_be_hidden()
    cell.locator(".jp-agent-digest-toggle").click()
    expect(digest).to_be_visible()
    expect(digest).to_contain_text("42")
    # Collapsible.
    cell.locator(".jp-agent-collapse").click()
    expect(cell.locator(".jp-agent-cell-body")).to_be_hidden()
    cell.locator(".jp-agent-collapse").click()
    expect(cell.locator(".jp-agent-cell-body")).to_be_visible()
    shot(page, "send-cell-reply")
    assert agent_errors(page) == []


def test_figure_shows_the_image(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Plotting.", "cells": [PNG_CELL]},
            {"text": "Here is the plot."},
        ]
    )
    view = new_chat(page)
    send_message(view, "Plot squares")
    img = view.locator(".jp-agent-cell .jp-OutputArea-output img").first
    expect(img).to_be_visible(timeout=60000)
    loaded = "img => img.complete && img.naturalWidth > 100"
    page.wait_for_function(loaded, arg=img.element_handle())
    src = img.get_attribute("src") or ""
    assert src.startswith("data:image/png;base64,")
    assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    expect(view.locator(".jp-agent-reply")).to_contain_text("Here is the plot.", timeout=60000)
    shot(page, "figure")


def test_stop_a_slow_run(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "This takes a while.", "cells": [SLOW_CELL]},
            {"text": "never reached"},
        ]
    )
    view = new_chat(page)
    send_message(view, "Run something slow")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    stop = view.locator(".jp-agent-stop")
    expect(stop).to_be_visible()
    expect(stop).to_have_text("Stop")
    stop.click()  # soft: acts at the next step, which a 60 s cell would not reach soon
    expect(stop).to_have_text("Stop now")
    # The person is told what the first click does, and what the second would.
    note = view.locator(".jp-agent-stopping")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Stopping after the running cell ends")
    expect(note).to_contain_text("Stop now ends the cell at once")
    shot(page, "stopping")
    stop.click()  # hard: at once
    expect(note).to_be_hidden(timeout=30000)
    end = view.locator(".jp-agent-end")
    expect(end).to_have_text("Stopped now (hard stop)", timeout=30000)
    expect(stop).to_be_hidden()
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(0)
    shot(page, "stopped")


def test_steering_message_mid_run(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Working on it.", "cells": ["import time\ntime.sleep(3)\nprint('slept')"]},
            {"expect": {"last_user_contains": "also say hi"}, "text": "Hi! Done as asked."},
        ]
    )
    view = new_chat(page)
    send_message(view, "Sleep a bit")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    expect(view.locator(".jp-agent-send")).to_have_text("Steer")
    send_message(view, "also say hi")
    steering = view.locator(".jp-agent-steering")
    expect(steering).to_contain_text("also say hi")
    expect(steering.locator(".jp-agent-label")).to_contain_text("queued for the running turn")
    shot(page, "steering-queued")
    expect(view.locator(".jp-agent-reply")).to_contain_text("Hi! Done as asked.", timeout=60000)
    expect(view.locator(".jp-agent-end")).to_have_text("Done")
    expect(steering.locator(".jp-agent-label")).to_have_text("You · steering")
    shot(page, "steering-done")


def test_a_message_sent_before_a_stop_opens_the_next_turn(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "Counting.", "cells": ["import time\ntime.sleep(3)\nprint('counted')"]},
            {"text": "Stopped as you asked."},
            {"expect": {"last_user_contains": "also the minimum"}, "text": "The minimum is 0."},
        ]
    )
    view = new_chat(page)
    send_message(view, "Count slowly")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    send_message(view, "also the minimum")
    view.locator(".jp-agent-stop").click()  # soft: after the cell
    # The stopped turn does not keep the message; the next turn opens with it, answered.
    expect(view.locator(".jp-agent-end").first).to_have_text("Stopped", timeout=60000)
    expect(view.locator(".jp-agent-user").last).to_contain_text("also the minimum", timeout=60000)
    expect(view.locator(".jp-agent-reply").last).to_contain_text("The minimum is 0.", timeout=60000)
    expect(view.locator(".jp-agent-steering")).to_have_count(0)
    shot(page, "steering-after-stop")


def test_open_trace_as_notebook(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {"text": "One cell.", "cells": ["x = 21\nprint(x * 2)"]},
            {"text": "It printed 42."},
        ]
    )
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "Trace me")
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=60000)
    view.locator(".jp-agent-open-trace").first.click()
    notebook = page.locator(".jp-NotebookPanel:visible")
    # Its first code cell is the hidden replay set-up; the agent's cell comes after it.
    cell = notebook.locator(".jp-CodeCell").nth(1)
    expect(cell).to_contain_text("print(x * 2)", timeout=30000)
    expect(cell.locator(".jp-OutputArea-output").first).to_contain_text("42")
    shot(page, "trace-notebook")
    opened = opened_notebook_state(page)
    assert opened["path"] == "agent-traces/Trace me - turn 1.ipynb"
    assert opened["kernel"] is None  # a record opens with no kernel (one starts on a run)
    assert opened["sessions"] == []
    assert opened["kernelspec"] == "jupyter-agent"  # what a run of a cell would start
    assert opened["dirty"] is False
    # The chat's export: into the trace folder too, opened unmodified.
    page.evaluate(f"() => window.jupyterapp.shell.activateById('jp-agent-chat-tab-{chat_id}')")
    page.locator(f"#jp-agent-chat-{chat_id} .jp-agent-export").click()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === "
        "'agent-traces/Trace me.ipynb'",
        timeout=30000,
    )
    exported = opened_notebook_state(page)
    assert exported["dirty"] is False
    assert exported["kernel"] is None
    assert exported["sessions"] == []


def test_insert_as_cell_never_writes_into_a_record(page: Page, fake: FakeProvider) -> None:
    fake.load([{"text": "One cell.", "cells": ["y = 2\nprint(y + 40)"]}, {"text": "42."}])
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(view, "Insert me")
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=60000)
    view.locator(".jp-agent-open-trace").first.click()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === "
        "'agent-traces/Insert me - turn 1.ipynb'",
        timeout=30000,
    )
    page.evaluate(f"() => window.jupyterapp.shell.activateById('jp-agent-chat-tab-{chat_id}')")
    view.locator(".jp-agent-insert").first.click()
    # The trace is the only notebook open: the person is asked, not the trace written.
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("is a record of the agent's", timeout=10000)
    expect(dialog.locator("select")).to_have_value("A new notebook")
    dialog.locator(".jp-mod-accept").click()
    page.wait_for_function(
        "() => (window.jupyterapp.shell.currentWidget?.context?.path || '').startsWith('Untitled')",
        timeout=30000,
    )
    # The person's default kernel, no kernel picker left open.
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    page.wait_for_function(
        "() => (window.jupyterapp.shell.currentWidget?.content?.model?.sharedModel?.cells || [])"
        ".some(c => c.getSource() === 'y = 2\\nprint(y + 40)')",
        timeout=30000,
    )
    trace = page.evaluate(
        """() => {
            for (const w of window.jupyterapp.shell.widgets('main')) {
                if (w.context?.path === 'agent-traces/Insert me - turn 1.ipynb') {
                    return {dirty: w.context.model.dirty,
                            cells: w.content.model.sharedModel.cells.map(c => c.getSource())};
                }
            }
            return null;
        }"""
    )
    assert trace is not None
    assert trace["dirty"] is False
    assert "y = 2\nprint(y + 40)" in trace["cells"]  # its own record of the cell, once
    assert trace["cells"].count("y = 2\nprint(y + 40)") == 1


def opened_notebook_state(page: Page) -> dict[str, Any]:
    """The current notebook once its kernel is up and JupyterLab wrote its metadata."""
    state: dict[str, Any] = page.evaluate(
        """async () => {
            const w = window.jupyterapp.shell.currentWidget;
            await w.context.ready;
            await w.sessionContext.ready;
            const kernel = w.sessionContext.session?.kernel;
            if (kernel) { await kernel.info; await kernel.spec; }
            // _updateLanguage and _updateSpec run on the kernel's promises: let them land.
            await new Promise(resolve => setTimeout(resolve, 1000));
            const sessions = [];
            for (const m of window.jupyterapp.serviceManager.sessions.running()) {
                if (m.path === w.context.path) { sessions.push(m.id); }
            }
            return {path: w.context.path, kernel: kernel?.name ?? null,
                    kernelspec: w.context.model.getMetadata('kernelspec')?.name ?? null,
                    sessions, dirty: w.context.model.dirty};
        }"""
    )
    return state


def test_reload_restores_the_chat(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    fake.load(
        [
            {"text": "Checking.", "cells": ["print('restored-' + 'ok')"]},
            {"text": "All **restored**."},
        ]
    )
    view = new_chat(page)
    send_message(view, "Remember me")
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=60000)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    assert chat_id.startswith("chat_")
    page.reload()
    wait_restored(page)
    # The layout restorer reopens the chat; it is rebuilt from the server.
    restored = page.locator(f"#jp-agent-chat-{chat_id}")
    if restored.count() == 0 or not restored.is_visible():
        page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
    expect(restored.locator(".jp-agent-user")).to_contain_text("Remember me", timeout=30000)
    expect(restored.locator(".jp-agent-code")).to_contain_text("restored-", timeout=30000)
    expect(restored.locator(".jp-OutputArea-output")).to_contain_text("restored-ok")
    expect(restored.locator(".jp-agent-reply strong")).to_have_text("restored")
    expect(restored.locator(".jp-agent-end")).to_have_text("Done")
    shot(page, "reloaded")


def test_demo_model_with_no_provider(page: Page, lab: LabServer) -> None:
    # A codegen tier whose key is missing cannot run: the server falls back to the demo.
    r = lab.request(
        "PUT",
        "agent/settings",
        {
            "tiers": {
                "codegen": {
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "base_url": "https://api.anthropic.com",
                    "api_key_ref": "env:ANTHROPIC_API_KEY",
                }
            }
        },
    )
    assert r.status_code == 200, r.text
    try:
        assert lab.get("agent/status").json()["demo"] is True
        page.reload()
        wait_restored(page)
        view = new_chat(page)
        expect(page.locator(".jp-agent-sidebar .jp-agent-demo-badge")).to_have_text(
            "Demo model — offline, no API key"
        )
        expect(page.locator(".jp-agent-first-run")).to_contain_text("ANTHROPIC_API_KEY")
        # the about line: the release the server runs (GET agent/status's version)
        expect(page.locator(".jp-agent-sidebar .jp-agent-version")).to_have_text(
            f"jupyter-agent {jupyter_agent.__version__}"
        )
        expect(view.locator(".jp-agent-demo-badge")).to_be_visible()
        send_message(view, "Show me what you can do")
        table = view.locator(".jp-agent-cell").first.locator(".jp-OutputArea-output table")
        expect(table).to_be_visible(timeout=60000)
        expect(view.locator(".jp-agent-reply")).to_contain_text(
            re.compile("offline demo model", re.I), timeout=60000
        )
        expect(view.locator(".jp-agent-end")).to_have_text("Done")
        shot(page, "demo")
    finally:
        lab.request("PUT", "agent/settings", {"tiers": {"codegen": None}})


def test_two_tabs_stay_in_step(page: Page, fake: FakeProvider, lab: LabServer) -> None:
    fake.load(
        [
            {"text": "Both tabs see this.", "cells": ["print('in-step')"]},
            {"text": "Seen in **both** tabs."},
        ]
    )
    view = new_chat(page)
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    other = page.context.new_page()
    try:
        # Its own workspace: two windows on one workspace make JupyterLab's window
        # resolver move one of them.
        open_lab(other, lab, "lab/workspaces/twin")
        other.evaluate(
            "id => window.jupyterapp.commands.execute('jupyter-agent:open-chat', {id})", chat_id
        )
        twin = other.locator(f"#jp-agent-chat-{chat_id}")
        twin.locator(".jp-agent-connection[data-state='open']").wait_for()
        send_message(view, "Say it twice")
        for v in (view, twin):
            expect(v.locator(".jp-OutputArea-output")).to_contain_text("in-step", timeout=60000)
            expect(v.locator(".jp-agent-reply strong")).to_have_text("both", timeout=60000)
        # The other tab gets the person's message from the turn record.
        expect(twin.locator(".jp-agent-user")).to_contain_text("Say it twice")
    finally:
        other.close()


def test_settings_offer_only_allowed_key_references(page: Page) -> None:
    # Not awaited: the command resolves only when the dialog closes.
    page.evaluate("() => { window.jupyterapp.commands.execute('jupyter-agent:settings'); }")
    dialog = page.locator(".jp-Dialog .jp-agent-settings")
    codegen = dialog.locator("fieldset[data-tier='codegen']")
    expect(codegen.locator("input[name='model']")).to_have_value("claude-sonnet-4-5")
    refs = codegen.locator("select[name='api_key_ref'] option").all_text_contents()
    assert "env:ANTHROPIC_API_KEY" in refs
    assert "env:OPENAI_API_KEY" in refs
    assert all(r == "(none)" or r.startswith("env:") for r in refs)
    assert dialog.locator("input[type='password']").count() == 0  # never a key value
    shot(page, "settings")
    page.locator(".jp-Dialog .jp-mod-reject").click()
    expect(dialog).to_have_count(0)


def test_dark_theme_and_no_console_errors(page: Page) -> None:
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_selector("#jupyterlab-splash", state="detached")
    chat = page.locator(".jp-agent-chat:visible").last
    expect(chat).to_be_visible()
    shot(page, "dark-theme")
    errors: list[str] = page.console_errors  # type: ignore[attr-defined]
    print("console errors:", errors)
    assert errors == []
