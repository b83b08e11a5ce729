"""The chat follows the conversation; the demo label in restored tabs; tier readiness.

A real ``jupyter lab`` and Debian's chromium, as in ``test_panel.py`` (one server and one
browser for the module; each test loads its own script into the fake provider). Whether
the newest message is in view is measured with bounding boxes against the scroll
container's, never with a screenshot or a fixed wait.
"""

from __future__ import annotations

import contextlib
from typing import Any

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    LabServer,
    browser_marks,
    new_chat,
    send_message,
    wait_restored,
)

VIEWPORT = {"width": 1300, "height": 800}

pytestmark = browser_marks(timeout_s=180)


PNG_CELL = (
    "import io\n"
    "import matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\n"
    "from IPython.display import Image, display\n"
    "fig, ax = plt.subplots(figsize=(4, 3))\n"
    "ax.plot([1, 2, 3], [1, 4, 9])\n"
    "buf = io.BytesIO()\n"
    "fig.savefig(buf, format='png')\n"
    "display(Image(buf.getvalue()))\n"
)


def long_text(label: str, paragraphs: int = 40) -> str:
    body = "\n\n".join(
        f"{label} paragraph {i}: the agent explains a step." for i in range(paragraphs)
    )
    return f"{body}\n\nThe end of the {label}: **last-line**."


# The geometry, measured in the page: the last reply against the scroll container.
GEOMETRY = """view => {
  const box = view.querySelector('.jp-agent-messages');
  const replies = view.querySelectorAll('.jp-agent-reply');
  const last = replies[replies.length - 1];
  if (!box || !last) { return null; }
  const b = box.getBoundingClientRect();
  const r = last.getBoundingClientRect();
  return {boxTop: b.top, boxBottom: b.bottom, top: r.top, bottom: r.bottom,
          scrollTop: box.scrollTop, scrollHeight: box.scrollHeight,
          clientHeight: box.clientHeight};
}"""

IN_VIEW = f"""view => {{
  const g = ({GEOMETRY})(view);
  return !!g && g.bottom <= g.boxBottom + 1 && g.bottom > g.boxTop;
}}"""


def geometry(view: Locator) -> dict[str, float]:
    g: dict[str, float] | None = view.evaluate(GEOMETRY)
    assert g is not None, "no reply in the view"
    return g


def wait_last_reply_in_view(page: Page, view: Locator) -> dict[str, float]:
    """Wait until the last reply's bottom is inside the scroll container; its geometry."""
    # On a time-out, the assertions below say what was seen.
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(IN_VIEW, arg=view.element_handle(), timeout=20000)
    g = geometry(view)
    assert g["scrollHeight"] > g["clientHeight"] + 100, ("the chat does not overflow", g)
    assert g["boxTop"] < g["bottom"] <= g["boxBottom"] + 1, ("the last reply is out of view", g)
    return g


def chat_id_of(view: Locator) -> str:
    chat_id = (view.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    assert chat_id.startswith("chat_")
    return chat_id


def long_chat(page: Page, fake: FakeProvider) -> tuple[Locator, str]:
    """A chat whose turn (a late-rendering figure, a long reply) overflows the view."""
    fake.load([{"text": "Plotting first.", "cells": [PNG_CELL]}, {"text": long_text("reply")}])
    view = new_chat(page)
    send_message(view, "Plot, then explain at length")
    reply = view.locator(".jp-agent-reply").last
    expect(reply.locator("strong")).to_have_text("last-line", timeout=60000)
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=30000)
    return view, chat_id_of(view)


def restored_view(page: Page, chat_id: str) -> Locator:
    """The chat's view after a reload: reopened by the layout restorer (else the sidebar)."""
    view = page.locator(f"#jp-agent-chat-{chat_id}")
    try:
        view.wait_for(state="visible", timeout=15000)
    except PlaywrightTimeout:
        page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:open-panel')")
        page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
        view.wait_for(state="visible")
    return view


def test_last_reply_in_view_after_send(page: Page, fake: FakeProvider) -> None:
    view, _ = long_chat(page, fake)
    wait_last_reply_in_view(page, view)
    expect(view.locator(".jp-agent-jump")).to_be_hidden()


def test_last_reply_in_view_when_opened_from_the_sidebar(page: Page, fake: FakeProvider) -> None:
    _, chat_id = long_chat(page, fake)
    page.evaluate(
        """id => { for (const w of window.jupyterapp.shell.widgets('main')) {
             if (w.id === id) { w.close(); } } }""",
        f"jp-agent-chat-tab-{chat_id}",
    )
    expect(page.locator(f"#jp-agent-chat-{chat_id}")).to_have_count(0)
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:open-panel')")
    page.locator(f".jp-agent-chat-item[data-chat-id='{chat_id}'] .jp-agent-chat-open").click()
    view = page.locator(f"#jp-agent-chat-{chat_id}")
    expect(view.locator(".jp-agent-reply strong").last).to_have_text("last-line", timeout=30000)
    wait_last_reply_in_view(page, view)


def test_last_reply_in_view_after_reload(page: Page, fake: FakeProvider) -> None:
    _, chat_id = long_chat(page, fake)
    page.reload()
    wait_restored(page)
    view = restored_view(page, chat_id)
    expect(view.locator(".jp-agent-reply strong").last).to_have_text("last-line", timeout=30000)
    wait_last_reply_in_view(page, view)


def test_scrolling_up_mid_run_shows_jump_to_latest(page: Page, fake: FakeProvider) -> None:
    fake.load(
        [
            {
                "text": long_text("plan"),
                "cells": ["import time\ntime.sleep(5)\nprint('woke up')"],
            },
            {"text": long_text("reply")},
        ]
    )
    view = new_chat(page)
    send_message(view, "Think at length, then sleep")
    expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
    box = view.locator(".jp-agent-messages")
    jump = view.locator(".jp-agent-jump")
    expect(jump).to_be_hidden()
    box.hover()
    page.mouse.wheel(0, -700)  # the person scrolls up while the run goes on
    expect(jump).to_be_visible()
    # The wheel's scroll may still be moving when the button shows: read where it stopped.
    top: float = box.evaluate(
        """b => new Promise(done => {
            let last = b.scrollTop;
            const tick = () => setTimeout(() => {
                if (b.scrollTop === last) { done(last); } else { last = b.scrollTop; tick(); }
            }, 250);
            tick();
        })"""
    )
    # The reply arrives below; the view stays where the person put it.
    expect(view.locator(".jp-agent-reply strong")).to_have_text("last-line", timeout=60000)
    expect(view.locator(".jp-agent-end")).to_have_text("Done", timeout=30000)
    g = geometry(view)
    assert abs(g["scrollTop"] - top) <= 2, (top, g)
    assert g["bottom"] > g["boxBottom"], ("the view followed although scrolled up", g)
    expect(jump).to_be_visible()
    jump.click()
    wait_last_reply_in_view(page, view)
    expect(jump).to_be_hidden()


def put_tier(lab: LabServer, name: str, tier: dict[str, Any] | None) -> None:
    r = lab.request("PUT", "agent/settings", {"tiers": {name: tier}})
    assert r.status_code == 200, r.text


def test_demo_label_in_a_restored_chat_tab(page: Page, lab: LabServer) -> None:
    anthropic = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "api_key_ref": "env:ANTHROPIC_API_KEY",  # not set in the lab's environment
    }
    put_tier(lab, "codegen", anthropic)
    try:
        assert lab.get("agent/status").json()["demo"] is True
        page.reload()
        wait_restored(page)
        view = new_chat(page)
        expect(view.locator(".jp-agent-demo-badge")).to_be_visible()
        chat_id = chat_id_of(view)
        page.reload()
        wait_restored(page)
        restored = restored_view(page, chat_id)
        expect(restored.locator(".jp-agent-demo-badge")).to_be_visible()
        expect(restored.locator(".jp-agent-demo-badge")).to_have_text(
            "Demo model — offline, no API key"
        )
    finally:
        put_tier(lab, "codegen", None)
    page.reload()
    wait_restored(page)


def open_settings(page: Page) -> Locator:
    # Not awaited: the command resolves only when the dialog closes.
    page.evaluate("() => { window.jupyterapp.commands.execute('jupyter-agent:settings'); }")
    dialog = page.locator(".jp-Dialog .jp-agent-settings")
    dialog.wait_for()
    return dialog


def test_settings_show_readiness_and_bound_urls(page: Page, lab: LabServer) -> None:
    vision = {"provider": "openai", "model": "gpt-x", "api_key_ref": "env:OPENAI_API_KEY"}
    put_tier(lab, "vision", vision)
    try:
        dialog = open_settings(page)
        codegen = dialog.locator("fieldset[data-tier='codegen'] .jp-agent-tier-readiness")
        expect(codegen).to_have_text("Ready · no key needed")
        expect(codegen).to_have_attribute("data-ready", "true")
        tier = dialog.locator("fieldset[data-tier='vision']")
        readiness = tier.locator(".jp-agent-tier-readiness")
        expect(readiness).to_have_text("Not ready: env:OPENAI_API_KEY is not set on the server")
        expect(readiness).to_have_attribute("data-ready", "false")
        # No provider chosen: it says what answers for it, not the codegen tier's reason.
        classify = dialog.locator("fieldset[data-tier='classify'] .jp-agent-tier-readiness")
        expect(classify).to_have_text("Not set: the codegen tier answers for it")
        # Only the allowed references; a key is offered only the URLs it is bound to.
        key = tier.locator("select[name='api_key_ref']")
        refs = key.locator("option").all_text_contents()
        assert refs == ["(none)", "env:ANTHROPIC_API_KEY", "env:OPENAI_API_KEY"]
        urls = tier.locator("select[name='base_url'] option").all_text_contents()
        assert urls == ["https://api.openai.com/v1"]
        key.select_option("env:ANTHROPIC_API_KEY")
        urls = tier.locator("select[name='base_url'] option").all_text_contents()
        assert urls == ["https://api.anthropic.com"]
        # Keyless: a loopback server of one's own may be typed (the admin allows it).
        key.select_option("")
        url = tier.locator("input[name='base_url']")
        expect(url).to_be_visible()
        assert "127.0.0.1" in (url.get_attribute("placeholder") or "")
        page.locator(".jp-Dialog .jp-mod-reject").click()
        expect(dialog).to_have_count(0)
    finally:
        put_tier(lab, "vision", None)


def test_settings_show_and_set_an_unknown_models_profile(
    page: Page, lab: LabServer, fake: FakeProvider
) -> None:
    mine = {"provider": "fake", "model": "my-local-llm", "base_url": fake.base_url}
    put_tier(lab, "vision", mine)
    try:
        dialog = open_settings(page)
        tier = dialog.locator("fieldset[data-tier='vision']")
        line = tier.locator(".jp-agent-profile-line")
        expect(line).to_have_text(
            "Assumed (the model is not known): 8k context · 2k output · fenced tools. "
            "Set its window and tool mode below."
        )
        expect(line).to_have_attribute("data-assumed", "true")
        tier.locator("input[name='profile_context_window']").fill("32768")
        tier.locator("select[name='profile_tool_mode']").select_option("native")
        page.locator(".jp-Dialog .jp-mod-accept").click()
        expect(dialog).to_have_count(0)
        settings = lab.get("agent/settings").json()
        assert settings["tiers"]["vision"]["profile"] == {
            "context_window": 32768,
            "tool_mode": "native",
        }
        assert settings["readiness"]["vision"]["profile"]["assumed"] is False
        dialog = open_settings(page)
        line = dialog.locator("fieldset[data-tier='vision'] .jp-agent-profile-line")
        expect(line).to_have_text("Profile: 32k context · 2k output · native tools")
        page.locator(".jp-Dialog .jp-mod-reject").click()
    finally:
        put_tier(lab, "vision", None)


def test_server_log_says_once_which_tiers_are_ready(lab: LabServer) -> None:
    text = lab.log_path.read_text(errors="replace")
    lines = [line for line in text.splitlines() if "jupyter-agent: tiers ready" in line]
    assert len(lines) == 1, lines
    assert "codegen (fake claude-sonnet-4-5)" in lines[0]
    assert "demo model not in use" in lines[0]
