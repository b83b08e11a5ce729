"""Deployed versions through the real store and registry (issue 16): the next run uses the
active version, a v5 run replays identically after v6 is deployed and after v5 is made
inactive (in process and with ``jupyter agent replay``: the store, the program cache, a
changed or missing version), and ``trace prune`` removes the versions nothing needs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.exceptions import ProgramMismatch
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.store.program_store import ProgramRow
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)

SOURCE = '''"""A toolcaller that echoes the message (a deployed version, for the tests)."""
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.effects import Effect

PREFIX = "{prefix}"


def program(run_id, chat_id):
    started = (yield Effect(name="clock.now", data={{}})).data
    items = (yield Effect(name="mailbox.drain", data={{}})).data or []
    text = next((str(i.get("text")) for i in items if i.get("kind") == "message"), "")
    reply = f"{{PREFIX}}: {{text}}"
    yield Effect(name="chat.post", data={{"text": reply, "done": True}})
    turn_id = (yield Effect(name="id.new", data={{"kind": "turn"}})).data
    turn = TurnRecord(
        id=str(turn_id), chat_id=chat_id, run_id=run_id, user_text=text,
        replies=(Reply(text=reply, done=True),), created=str(started),
        llm=TurnLLM(stop_reason="done", end_cause="done"),
    )
    yield Effect(name="turn.append", data=turn.to_json())
    return turn
'''
USES = ("llm@v1", "history@v1", "autorecall@v1")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(folder))
    return folder


@pytest.fixture
async def agent(
    tmp_path: Path, data_dir: Path, fake_provider: Any, kernel_manager: Any
) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    # The server's program cache is the data dir's, as the CLI looks for it.
    cache = data_dir / "jupyter_agent" / "programs"
    harness.manager.services.programs = ProgramRegistry(harness.store, cache)
    yield harness
    await close_harness(harness)


def deploy(agent: Harness, prefix: str, *, activate: bool = True) -> ProgramRow:
    files = {"program.py": SOURCE.format(prefix=prefix)}
    row = agent.store.add_program(
        ProgramRow(
            name="toolcaller", hash=content_hash("toolcaller", files), files=files, uses=USES
        )
    )
    if activate:
        agent.store.activate("", "toolcaller", row.version, "test")
    return row


def db_url(agent: Harness) -> str:
    return f"sqlite:///{agent.root / 'agent.sqlite'}"


async def test_v5_replays_after_v6_and_after_it_is_inactive(
    agent: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    v5 = deploy(agent, "v5")
    assert v5.version == 9
    chat = agent.new_chat()
    first = await agent.ask(chat, "one")
    ref5 = f"toolcaller@v9#{v5.hash[:12]}"
    assert final_text(first) == "v5: one"
    assert first.programs is not None
    assert first.programs[0] == ref5
    v6 = deploy(agent, "v6")
    assert v6.version == 10
    second = await agent.ask(chat, "two")
    assert final_text(second) == "v6: two"
    assert agent.trace(second.run_id).header["programs"][0] == f"toolcaller@v10#{v6.hash[:12]}"
    agent.store.activate("", "toolcaller", 8, "test")  # v5 and v6 inactive: the built-in
    agent.fake.load([{"text": "Built in."}])
    third = await agent.ask(chat, "three")
    assert final_text(third) == "Built in."
    assert agent.trace(third.run_id).header["program"] == "toolcaller@v8"

    log5 = agent.manager.log_path(first.run_id)
    registry = agent.manager.services.programs
    assert verify_run(log5, registry.load).identical
    # the CLI, from the local store
    assert main(["replay", str(log5), "--db-url", db_url(agent)]) == 0
    out = capsys.readouterr()
    assert f"identical: run {first.run_id} replayed with {ref5}" in out.out
    # ... and from the program cache alone (no database in the data dir)
    assert main(["replay", str(log5)]) == 0
    assert "identical" in capsys.readouterr().out
    # a run of the built-in replays as before
    assert main(["replay", str(agent.manager.log_path(third.run_id))]) == 0
    capsys.readouterr()


async def test_replay_says_when_a_version_is_changed_or_missing(
    agent: Harness, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v5 = deploy(agent, "v5")
    turn = await agent.ask(agent.new_chat(), "one")
    log5 = agent.manager.log_path(turn.run_id)
    cached = data_dir / "jupyter_agent" / "programs" / v5.hash / "program.py"
    cached.write_text(cached.read_text().replace('"v5"', '"v5!"'))
    with pytest.raises(ProgramMismatch):
        ProgramRegistry(None, cached.parent.parent).load(
            agent.trace(turn.run_id).header["programs"][0]
        )
    assert main(["replay", str(log5)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "toolcaller@v9: the run recorded" in err
    cached.parent.rename(cached.parent.with_name("gone"))
    assert main(["replay", str(log5), "--addr", "http://127.0.0.1:9/"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "has no toolcaller@v9" in err


async def test_prune_removes_versions_no_run_names_and_no_layer_runs(
    agent: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(agent, "v5")
    await agent.ask(agent.new_chat(), "one")
    v6 = deploy(agent, "v6", activate=False)
    v7 = deploy(agent, "v7")  # active: kept
    url = db_url(agent)
    assert main(["trace", "prune", "--older-than", "1", "--db-url", url, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"toolcaller@v10#{v6.hash[:12]}" in out
    assert "toolcaller@v9" not in out.split("version")[-1]  # a run names it
    assert "toolcaller@v11" not in out
    assert main(["trace", "prune", "--older-than", "0", "--db-url", url]) == 0
    out = capsys.readouterr().out
    assert "toolcaller@v9#" in out  # its run is gone now
    assert "toolcaller@v10#" in out
    assert agent.store.program("toolcaller", 9) is None
    assert agent.store.program("toolcaller", 10) is None
    assert agent.store.program("toolcaller", 11) is not None
    assert v7.version == 11
