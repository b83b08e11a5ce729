"""The Memory view and the recalled block (issue 15) in a real browser against a real
``jupyter lab`` and the fake provider.

- The Memory view lists the person's facts by category, searches them, edits one in
  place, refuses a credential-like text inline (keeping what was typed), adds one and
  deletes one after a confirmation; every change is checked on the server (REST).
- A fact the agent saves in one chat (a scripted ``memory.save`` cell) is recalled for a
  message in a new chat: the run shows a collapsed "recalled 1 memory" block above its
  reply, marked as recalled; it is still there after a reload (from the turn record); a
  message that recalls nothing shows no block.

Screenshots go to ``test-artifacts/browser/`` (printed).
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import (
    LabServer,
    browser_marks,
    new_chat,
    open_lab,
    send_message,
    shot,
)

pytestmark = browser_marks(timeout_s=240)

#: A credential-like text: refused by the server, never stored, never echoed.
SECRET = "sk-proj-" + "Zq7xY2wL9mN4bV6cR1tK8hJ3"


def agent_errors(page: Page) -> list[str]:
    """Console errors that come from the agent panel (JupyterLab's own are not ours)."""
    errors: list[str] = page.console_errors  # type: ignore[attr-defined]
    return [e for e in errors if "agent" in e.lower()]


def memories(lab: LabServer) -> list[dict[str, Any]]:
    """Every fact on the server, newest change first."""
    response = lab.get("agent/memories")
    assert response.status_code == 200, response.text
    facts: list[dict[str, Any]] = response.json()["memories"]
    return facts


def add_fact(lab: LabServer, text: str, category: str) -> dict[str, Any]:
    response = lab.request("POST", "agent/memories", {"text": text, "category": category})
    assert response.status_code == 201, response.text
    fact: dict[str, Any] = response.json()
    return fact


def clear_memory(lab: LabServer) -> None:
    for fact in memories(lab):
        assert lab.request("DELETE", f"agent/memories/{fact['id']}").status_code == 204


def open_memory_from_sidebar(page: Page) -> Locator:
    """Open the Memory view with the sidebar's button; its locator."""
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:open-panel')")
    page.locator(".jp-agent-sidebar .jp-agent-memory-button").click()
    view = page.locator(".jp-agent-memory:visible")
    expect(view).to_have_count(1)
    return view


def row(view: Locator, fact_id: str) -> Locator:
    return view.locator(f".jp-agent-memory-item[data-memory-id='{fact_id}']")


def test_memory_view_lists_edits_and_deletes_a_fact(page: Page, lab: LabServer) -> None:
    clear_memory(lab)
    data = add_fact(lab, "The raw sales data lives in s3://acme-raw/sales", "project")
    theme = add_fact(lab, "Plots use the dark theme and seaborn", "preferences")
    view = open_memory_from_sidebar(page)

    # Listed by category, with counts.
    project = view.locator(".jp-agent-memory-group[data-category='project']")
    expect(project.locator(".jp-agent-memory-group-title")).to_have_text("project (1)")
    expect(row(project, data["id"]).locator(".jp-agent-memory-text")).to_have_text(data["text"])
    expect(row(view, theme["id"]).locator(".jp-agent-memory-meta")).to_contain_text("added by you")
    chips = view.locator(".jp-agent-memory-categories .jp-agent-memory-category")
    expect(chips).to_have_text(["All2", "preferences1", "project1"])
    expect(chips.first).to_have_attribute("aria-pressed", "true")
    view.locator(".jp-agent-memory-category[data-category='preferences']").click()
    expect(view.locator(".jp-agent-memory-item")).to_have_count(1)
    expect(row(view, theme["id"])).to_be_visible()
    chips.first.click()
    expect(view.locator(".jp-agent-memory-item")).to_have_count(2)

    # Search: the server ranks the matches.
    search = view.get_by_label("Search memory")
    search.fill("dark theme")
    expect(view.locator(".jp-agent-memory-item")).to_have_count(1)
    expect(row(view, theme["id"]).locator(".jp-agent-memory-score")).to_contain_text("score")
    expect(view.locator(".jp-agent-memory-status")).to_contain_text("1 match for “dark theme”")
    search.fill("")
    expect(view.locator(".jp-agent-memory-item")).to_have_count(2)

    # Edit in place.
    item = row(view, data["id"])
    item.locator(".jp-agent-memory-edit").click()
    editor = item.locator(".jp-agent-memory-edit-text")
    expect(editor).to_be_focused()
    edited = "The raw sales data lives in s3://acme-raw/sales-2025"
    editor.fill(edited)
    item.locator(".jp-agent-memory-save").click()
    expect(item.locator(".jp-agent-memory-text")).to_have_text(edited)
    expect(item.locator(".jp-agent-memory-meta")).to_contain_text("(edited)")
    on_server = lab.get(f"agent/memories/{data['id']}").json()
    assert on_server["text"] == edited
    assert on_server["updated"] >= on_server["created"]

    # A credential-like edit is refused inline; the draft stays; Cancel keeps the fact.
    item.locator(".jp-agent-memory-edit").click()
    item.locator(".jp-agent-memory-edit-text").fill(f"the key is {SECRET}")
    item.locator(".jp-agent-memory-save").click()
    error = item.locator(".jp-agent-memory-edit-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Not saved")
    expect(error).not_to_contain_text(SECRET)
    expect(item.locator(".jp-agent-memory-edit-text")).to_have_value(f"the key is {SECRET}")
    shot(page, "memory-edit-refused")
    item.locator(".jp-agent-memory-cancel").click()
    expect(item.locator(".jp-agent-memory-text")).to_have_text(edited)
    assert lab.get(f"agent/memories/{data['id']}").json()["text"] == edited

    # Add: a credential is refused inline (what was typed stays), a plain fact is added.
    add_text = view.get_by_label("New fact")
    add_text.fill(f"My OpenAI key is {SECRET}")
    view.get_by_label("Category", exact=True).first.fill("secrets")
    view.locator(".jp-agent-memory-add-button").click()
    add_error = view.locator(".jp-agent-memory-add-error")
    expect(add_error).to_contain_text("Not saved")
    expect(add_error).not_to_contain_text(SECRET)
    expect(add_text).to_have_value(f"My OpenAI key is {SECRET}")
    assert all(SECRET not in json.dumps(f) for f in memories(lab))
    add_text.fill("Weekly reports go to Dana on Fridays")
    view.get_by_label("Category", exact=True).first.fill("People")
    view.locator(".jp-agent-memory-add-button").click()
    people = view.locator(".jp-agent-memory-group[data-category='people']")
    expect(people.locator(".jp-agent-memory-text")).to_have_text(
        "Weekly reports go to Dana on Fridays"
    )
    expect(add_text).to_have_value("")
    added = next(f for f in memories(lab) if f["category"] == "people")
    assert added["author"] == "person"
    assert added["text"] == "Weekly reports go to Dana on Fridays"
    expect(chips).to_have_text(["All3", "people1", "preferences1", "project1"])

    # Delete, after a confirmation (Cancel first: nothing happens).
    target = row(view, theme["id"])
    target.locator(".jp-agent-memory-delete").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text(theme["text"])
    dialog.locator(".jp-Dialog-button", has_text="Cancel").click()
    expect(dialog).to_have_count(0)
    expect(target).to_be_visible()
    target.locator(".jp-agent-memory-delete").click()
    shot(page, "memory-delete-confirm")
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-warn").click()
    expect(target).to_have_count(0)
    expect(view.locator(".jp-agent-memory-group[data-category='preferences']")).to_have_count(0)
    assert lab.get(f"agent/memories/{theme['id']}").status_code == 404
    assert {f["id"] for f in memories(lab)} == {data["id"], added["id"]}
    shot(page, "memory-view")
    assert agent_errors(page) == []


FACT = "The quarterly revenue figures live in finance_q3.parquet"


def test_a_recalled_fact_shows_as_a_block_in_the_chat(
    page: Page, fake: FakeProvider, lab: LabServer
) -> None:
    clear_memory(lab)
    fake.load(
        [
            {"text": "Saving that.", "cells": [f"memory.save({FACT!r}, category='project')"]},
            {"text": "Saved to memory."},
            {
                "expect": {"last_user_contains": "quarterly revenue"},
                "text": "They are in **finance_q3.parquet**.",
            },
            {"text": "Two plus two is four."},
        ]
    )
    # Chat A: the agent saves the fact (a real cell calling the memory app).
    chat_a = new_chat(page)
    chat_a_id = (chat_a.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(chat_a, "Please remember where the revenue numbers are kept")
    expect(chat_a.locator(".jp-agent-reply")).to_contain_text("Saved to memory.", timeout=60000)
    saved = memories(lab)
    assert [(f["text"], f["author"], f["chat_id"]) for f in saved] == [(FACT, "agent", chat_a_id)]

    # Chat B: a message about it recalls the fact before the model's first call.
    chat_b = new_chat(page)
    chat_b_id = (chat_b.get_attribute("id") or "").removeprefix("jp-agent-chat-")
    send_message(chat_b, "Where are the quarterly revenue figures?")
    reply = chat_b.locator(".jp-agent-reply")
    expect(reply).to_contain_text("They are in finance_q3.parquet.", timeout=60000)
    block = chat_b.locator(".jp-agent-run").first.locator(".jp-agent-recall")
    check_recalled_block(block)
    assert block_precedes(block, reply)
    # What the model was shown: the synthetic memory.search call and its result.
    sent = json.dumps(fake.requests[-1].json)
    assert "memory.search(" in sent
    assert FACT in sent
    shot(page, "recalled-block")

    # A message that recalls nothing shows no block.
    send_message(chat_b, "What is 2 plus 2?")
    expect(chat_b.locator(".jp-agent-reply").nth(1)).to_have_text(
        "Two plus two is four.", timeout=60000
    )
    expect(chat_b.locator(".jp-agent-run").nth(1).locator(".jp-agent-recall")).to_have_count(0)
    expect(chat_b.locator(".jp-agent-recall")).to_have_count(1)

    # After a reload: the block comes from the turn record.
    open_lab(page, lab)
    page.evaluate(
        "id => window.jupyterapp.commands.execute('jupyter-agent:open-chat', {id})",
        chat_b_id,
    )
    reloaded = page.locator(f"#jp-agent-chat-{chat_b_id}")
    expect(reloaded.locator(".jp-agent-reply").first).to_contain_text(
        "finance_q3.parquet", timeout=30000
    )
    check_recalled_block(reloaded.locator(".jp-agent-run").first.locator(".jp-agent-recall"))
    expect(reloaded.locator(".jp-agent-recall")).to_have_count(1)

    # The Memory view names the agent as the author and leads back to chat A.
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:memory')")
    view = page.locator(".jp-agent-memory:visible")
    fact_row = row(view, saved[0]["id"])
    expect(fact_row.locator(".jp-agent-memory-meta")).to_contain_text("saved by the agent")
    fact_row.locator(".jp-agent-memory-open-chat").click()
    expect(page.locator(f"#jp-agent-chat-{chat_a_id}")).to_be_visible()
    assert agent_errors(page) == []


def check_recalled_block(block: Locator) -> None:
    """A collapsed "recalled 1 memory" block, marked as recalled, listing the fact."""
    expect(block).to_have_count(1, timeout=30000)
    toggle = block.locator(".jp-agent-recall-toggle")
    expect(toggle).to_contain_text("recalled 1 memory")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(block.locator(".jp-agent-recall-mark")).to_contain_text("not the model\u2019s words")
    hits = block.locator(".jp-agent-recall-hits")
    expect(hits).to_be_hidden()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    memory_hit = hits.locator(".jp-agent-recall-hit[data-kind='memory']")
    expect(memory_hit).to_have_count(1)
    expect(memory_hit.locator(".jp-agent-text")).to_have_text(FACT)
    expect(memory_hit.locator(".jp-agent-recall-source")).to_contain_text("memory")
    score = memory_hit.locator(".jp-agent-recall-score")
    expect(score).to_have_text(re.compile(r"score [01]\.\d\d"))


def block_precedes(first: Locator, second: Locator) -> bool:
    """Whether ``first`` comes before ``second`` in the document."""
    handle = first.element_handle()
    other = second.element_handle()
    assert handle is not None
    assert other is not None
    following: bool = handle.evaluate(
        "(a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)", other
    )
    return following
