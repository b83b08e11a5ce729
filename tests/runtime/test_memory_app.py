"""The in-cell ``memory`` app through the run manager: a real agent kernel, the fake model.

Cells call ``memory.save/search/list/forget``; the host performs each as an ``app.call``
effect under the cell's seq; mutations show in the cell's digest by ``#seq``; a save the
host refuses (a credential) is the cell's ``AppCallError`` with the reason, stores
nothing and leaves the value in no record of the call; every run replays identically.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.secrets import Scrubber
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)

KEY = "configured-key-" + secrets.token_hex(10)
SHAPED = "ghp_" + secrets.token_hex(18)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    # As the assembly builds it: the server's scrubber knows the configured key.
    harness.manager.services.memory = MemoryService(
        harness.store, Scrubber({KEY: "ANTHROPIC_API_KEY"})
    )
    yield harness
    await close_harness(harness)


def lines_of(agent: Harness, run_id: str, name: str, phase: str) -> list[Any]:
    return [ln for ln in agent.trace(run_id).lines if ln.name == name and ln.phase == phase]


def digests(agent: Harness, run_id: str) -> list[str]:
    return [ln.data["digest"]["text"] for ln in lines_of(agent, run_id, "cell.run", "result")]


def assert_replays(agent: Harness, run_id: str) -> None:
    outcome = verify_run(agent.manager.log_path(run_id))
    assert outcome.identical, outcome.message


SAVE = (
    "a = memory.save('The person prefers seaborn plots.', category='Preferences')\n"
    "b = memory.save('Sales data lives in data/sales.parquet')\n"
    "print(a.startswith('mem_'), b.startswith('mem_'))"
)
READ = (
    "hits = memory.search('which plot style is preferred')\n"
    "print([(h['kind'], h['category'], h['text']) for h in hits])\n"
    "print(sorted(m['category'] for m in memory.list()))\n"
    "print(len(memory.list(category='preferences')))"
)
FORGET = (
    "[fid] = [m['id'] for m in memory.list() if 'Sales' in m['text']]\n"
    "print(memory.forget(fid), memory.forget(fid))\n"
    "print([m['text'] for m in memory.list()])"
)


async def test_a_cell_saves_searches_lists_and_forgets(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": [SAVE]},
            {"expect": {"last_user_contains": "True True"}, "cells": [READ]},
            {"expect": {"last_user_contains": "seaborn"}, "cells": [FORGET]},
            {"expect": {"last_user_contains": "True False"}, "text": "Saved and tidied."},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "remember what I like")
    assert final_text(turn) == "Saved and tidied."
    run_id = turn.run_id

    facts = agent.store.list_memories()
    assert [(m.text, m.category, m.author) for m in facts] == [
        ("The person prefers seaborn plots.", "preferences", "agent")
    ]
    assert (facts[0].chat_id, facts[0].run_id) == (chat, run_id)
    assert agent.store.get_memory(facts[0].id).turn_id == turn.id  # type: ignore[union-attr]

    calls = lines_of(agent, run_id, "app.call", "intent")
    cells = [ln.seq for ln in lines_of(agent, run_id, "cell.run", "intent")]
    assert [(c.data["method"], c.parent) for c in calls] == [
        ("save", cells[0]),
        ("save", cells[0]),
        ("search", cells[1]),
        ("list", cells[1]),
        ("list", cells[1]),
        ("list", cells[2]),
        ("forget", cells[2]),
        ("forget", cells[2]),
        ("list", cells[2]),
    ]
    # The mutations, by seq, in the digest the model read; reads only in the counts.
    saves = [c.seq for c in calls if c.data["method"] == "save"]
    forgets = [c.seq for c in calls if c.data["method"] == "forget"]
    first, second, third = digests(agent, run_id)
    assert "Side effects: memory.save \u00d72" in first
    for seq in saves:
        assert f"#{seq} memory.save (mutation)" in first
    assert "memory.search \u00d71" in second
    assert "memory.list \u00d72" in second
    assert "(mutation)" not in second
    for seq in forgets:
        assert f"#{seq} memory.forget (mutation)" in third
    assert "('memory', 'preferences', 'The person prefers seaborn plots.')" in second
    assert "['general', 'preferences']" in second
    assert_replays(agent, run_id)


REFUSED = (
    "try:\n"
    "    memory.save(open('creds.txt').read(), category='project')\n"
    "except AppCallError as err:\n"
    "    print('refused:', err)\n"
    "memory.save(open('creds.txt').read())"
)


@pytest.mark.parametrize("secret", [KEY, SHAPED], ids=["configured key", "token shape"])
async def test_a_credential_is_refused_in_the_cell_and_kept_out_of_every_record(
    agent: Harness, secret: str
) -> None:
    # The model never types the value: the cell reads it from a file, as a careless cell
    # would, so the value reaches the host only as the call's argument.
    (agent.root / "creds.txt").write_text(f"the deploy token is {secret}\n")
    agent.fake.load(
        [
            {"cells": [REFUSED]},
            {"expect": {"last_user_contains": "Not saved"}, "text": "I did not keep it."},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "remember the token in creds.txt")
    assert final_text(turn) == "I did not keep it."
    assert agent.store.list_memories() == []

    [result] = [ln.data for ln in lines_of(agent, turn.run_id, "cell.run", "result")]
    printed = json.dumps(result["prints"])
    assert "refused: Not saved: the text " in printed
    assert result["error"]["ename"] == "AppCallError"
    assert "Not saved: the text" in result["error"]["evalue"]
    assert "Secrets never go into memory" in result["error"]["evalue"]
    calls = result["app_calls"]
    assert [(c["method"], c["ok"], c["mutation"]) for c in calls] == [
        ("save", False, True),
        ("save", False, True),
    ]
    assert all(c["args"]["text"] == "[refused: credential]" for c in calls)
    assert calls[0]["args"]["category"] == "project"
    digest = result["digest"]["text"]
    for call in calls:
        assert f"#{call['seq']} memory.save (mutation) failed: Not saved: the text" in digest

    log_text = agent.manager.log_path(turn.run_id).read_text(encoding="utf-8")
    assert secret not in log_text  # not in the intent, the result, the cell, the digest
    intents = lines_of(agent, turn.run_id, "app.call", "intent")
    assert [i.data["args"]["text"] for i in intents] == ["[refused: credential]"] * 2
    for request in agent.fake.requests:
        assert secret not in json.dumps(request.json)  # nor in what the model was sent
    events = json.dumps(list(agent.events.since(chat, 0)))
    assert secret not in events
    assert_replays(agent, turn.run_id)


async def test_bad_arguments_are_the_cells_errors_and_write_nothing(agent: Harness) -> None:
    code = (
        "for call in (lambda: memory.save(''), lambda: memory.save('x', category='a/b'),\n"
        "             lambda: memory.save(123), lambda: memory.search('q', k=0),\n"
        "             lambda: memory.forget(7), lambda: memory.list(category='!')):\n"
        "    try:\n"
        "        call()\n"
        "    except AppCallError as err:\n"
        "        print('error:', err)\n"
        "print(memory.forget('mem_unknown'))"
    )
    agent.fake.load([{"cells": [code]}, {"text": "done"}])
    turn = await agent.ask(agent.new_chat(), "try odd calls")
    [result] = [ln.data for ln in lines_of(agent, turn.run_id, "cell.run", "result")]
    errors = json.dumps(result["prints"]).split("error: ")[1:]
    assert len(errors) == 6
    text = json.dumps(result["prints"])
    assert "'text' is empty" in text
    assert "'category' must be 1 to 40 characters" in text
    assert "'text' must be a string" in text
    assert "'k' must be an integer from 1 to 50" in text
    assert "'id' must be a memory id string" in text
    assert "False" in text  # forgetting an unknown id is no error
    assert agent.store.list_memories() == []
    assert_replays(agent, turn.run_id)


async def test_memory_calls_fan_out_in_a_batch(agent: Harness) -> None:
    code = (
        "rs = batch(*[memory.save.spec(f'fact number {i} about tables', category='data')\n"
        "             for i in range(4)])\n"
        "print([r.ok for r in rs], len(memory.list(category='data')))"
    )
    agent.fake.load([{"cells": [code]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "save four")
    assert len(agent.store.list_memories(category="data")) == 4
    [digest] = digests(agent, turn.run_id)
    assert "memory.save \u00d74 (4 batched)" in digest
    assert digest.count("memory.save (mutation)") == 4
    assert_replays(agent, turn.run_id)
