"""The history scheduler with a real SQLite store and the scripted fake provider on loopback.

Turns are stored the way a chat run stores them (``Store.append_turn``), then the scheduler
is kicked as the run manager kicks it when a turn ends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.history.program import HISTORY_PROGRAM
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.history.jobs import HistoryScheduler
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.settings.spaces import load_spaces
from jupyter_agent.store.repo import Store
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.show import show_run
from jupyter_agent.trace.stats import run_stats
from jupyter_agent.trace.verify import verify_run

CLASSIFY_MODEL = "claude-haiku-4-5"
CODEGEN_MODEL = "claude-sonnet-4-5"


def tiers(base_url: str, *, classify: bool = True) -> dict[str, dict[str, Any]]:
    out = {"codegen": {"provider": "fake", "model": CODEGEN_MODEL, "base_url": base_url}}
    if classify:
        out["classify"] = {"provider": "fake", "model": CLASSIFY_MODEL, "base_url": base_url}
    return out


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = Store(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    yield s
    s.close()


def add_turns(store: Store, chat_id: str, first: int, last: int) -> None:
    for n in range(first, last + 1):
        store.append_turn(
            TurnRecord(
                id=new_id("turn"),
                chat_id=chat_id,
                run_id=new_id("run"),
                user_text=f"message {n}: remember the number {n * 111}",
                replies=(Reply(text=f"reply {n}: noted {n * 111}", done=True),),
                created=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
                model=CODEGEN_MODEL,
                llm=TurnLLM(stop_reason="done", end_cause="done"),
            )
        )


def scheduler(store: Store, tmp_path: Path, config: Any, **kw: Any) -> HistoryScheduler:
    return HistoryScheduler(
        store=store,
        transport=Transport(retry_after_cap_s=1),
        run_config=config,
        runs_dir=tmp_path / "runs",
        chunk_turns=kw.pop("chunk_turns", 5),
        l2_chunks=kw.pop("l2_chunks", 5),
        **kw,
    )


def config_of(base_url: str, tmp_path: Path, *, classify: bool = True) -> Any:
    spaces = load_spaces(data_dir=tmp_path / "data", root_dir=tmp_path)
    return lambda agent="agent", owner="": RunConfig(
        tiers=tiers(base_url, classify=classify), ceilings={}, spaces=spaces
    )


async def stop(s: HistoryScheduler) -> None:
    await s.stop()
    await s.transport.aclose()


async def test_ten_turns_get_two_level_1_summaries_from_classify(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "- the numbers were noted"}], "repeat": True})
    # alice's chat (issue 19): its summary runs are hers, made with her tiers.
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso(), owner="alice").id
    base = config_of(fake.base_url, tmp_path)
    owners: list[str] = []

    def config(agent: str = "agent", *, owner: str) -> Any:
        owners.append(owner)
        return base(agent)

    s = scheduler(store, tmp_path, config)
    try:
        add_turns(store, chat_id, 1, 10)
        s.kick(chat_id)
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    chunks = store.list_chunks(chat_id)
    assert [(c.level, c.first_turn, c.last_turn) for c in chunks] == [(1, 1, 5), (1, 6, 10)]
    assert all(c.model == CLASSIFY_MODEL and c.text == "- the numbers were noted" for c in chunks)
    assert [r.json["model"] for r in fake.requests] == [CLASSIFY_MODEL, CLASSIFY_MODEL]
    # The first request holds the five turns of the first chunk and the _history skill.
    body = fake.requests[0].json
    prompt = "".join(b["text"] for b in body["messages"][0]["content"])
    assert "remember the number 111" in prompt
    assert "remember the number 555" in prompt
    assert "remember the number 666" not in prompt
    assert "goals" in "".join(b["text"] for b in body["system"])
    assert s.status() == {"pending": 0, "failing": 0, "last_error": None}
    # Each summary is a run of its own: listed, logged, shown, costed, replayable.
    runs, _ = store.list_runs(program="history")
    assert len(runs) == 2
    assert {r.run_id for r in runs} == {c.run_id for c in chunks}
    assert "alice" in owners
    assert store.list_runs(program="history", owner="")[0] == []
    for run in runs:
        assert run.owner == "alice"
        assert run.program == HISTORY_PROGRAM
        assert run.status == "done"
        assert run.chat_id == chat_id
        assert run.model == CLASSIFY_MODEL
        assert run.model_calls == 1
        assert run.usage.output_tokens > 0
        trace = read_log(tmp_path / "runs" / f"{run.run_id}.jsonl")
        assert trace.header["program"] == HISTORY_PROGRAM
        assert verify_run(trace).identical
        shown = show_run(trace)
        assert shown["program"] == HISTORY_PROGRAM
        assert [e["name"] for e in shown["effects"]][-2:] == ["http.post", "chunk.store"]
        stats = run_stats(trace)
        assert stats["totals"]["calls"] == 1
        assert stats["calls"][0]["tier"] == "classify"
        assert stats["calls"][0]["model"] == CLASSIFY_MODEL


async def test_without_classify_codegen_summarises(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "summary"}], "repeat": True})
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    s = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path, classify=False))
    try:
        add_turns(store, chat_id, 1, 5)
        s.kick(chat_id)
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    assert [c.model for c in store.list_chunks(chat_id)] == [CODEGEN_MODEL]


async def test_level_2_from_level_1_summaries(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "summary"}], "repeat": True})
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    s = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path), chunk_turns=2, l2_chunks=2)
    try:
        add_turns(store, chat_id, 1, 4)
        s.kick(chat_id)
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    spans = [(c.level, c.first_turn, c.last_turn) for c in store.list_chunks(chat_id)]
    assert spans == [(1, 1, 2), (1, 3, 4), (2, 1, 4)]
    last = "".join(b["text"] for b in fake.requests[-1].json["messages"][0]["content"])
    assert '<summary turns="1-2">' in last
    assert '<summary turns="3-4">' in last


async def test_a_provider_failure_is_retried_and_loses_no_turn(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    # 401 fails at once (no transport retry): the provider refuses until it is fixed.
    fake = fake_provider([{"error": {"status": 401}}, {"error": {"status": 401}}])
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    s = scheduler(
        store,
        tmp_path,
        config_of(fake.base_url, tmp_path),
        first_backoff_s=0.2,
        max_backoff_s=0.4,
    )
    try:
        add_turns(store, chat_id, 1, 5)
        s.kick(chat_id)
        deadline = asyncio.get_running_loop().time() + 20
        while len(fake.requests) < 2:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        status = s.status()
        assert status["pending"] == 1
        assert status["failing"] == 1
        assert "401" in status["last_error"]
        assert store.list_chunks(chat_id) == []
        failed, _ = store.list_runs(program="history")
        assert failed
        assert all(r.status == "error" for r in failed)
        fake.load({"steps": [{"text": "back: 111 noted"}], "repeat": True})  # the provider is back
        await asyncio.wait_for(s.idle(), 20)
    finally:
        await stop(s)
    (chunk,) = store.list_chunks(chat_id)
    assert (chunk.first_turn, chunk.last_turn, chunk.text) == (1, 5, "back: 111 noted")
    assert s.status() == {"pending": 0, "failing": 0, "last_error": None}
    assert store.turn_count(chat_id) == 5


async def test_a_restart_resumes_pending_spans(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "summary"}], "repeat": True})
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    other = store.create_chat(chat_id=new_id("chat"), title="u", now=now_iso()).id
    add_turns(store, chat_id, 1, 10)
    add_turns(store, other, 1, 3)  # no closed chunk: nothing to resume
    # The server stopped before summarising (never kicked): a new scheduler resumes.
    s = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path))
    try:
        assert await s.resume() == 1
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    assert len(store.list_chunks(chat_id)) == 2
    assert store.list_chunks(other) == []


async def test_a_run_cut_by_stop_is_made_again_later(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider([{"text": "slow", "delay_s": 30}])
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    add_turns(store, chat_id, 1, 5)
    s = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path))
    s.kick(chat_id)
    while not fake.requests:
        await asyncio.sleep(0.02)
    await asyncio.wait_for(stop(s), 10)  # does not wait for the slow call
    assert store.list_chunks(chat_id) == []
    fake.load({"steps": [{"text": "made after the restart"}], "repeat": True})
    again = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path))
    try:
        assert await again.resume() == 1
        await asyncio.wait_for(again.idle(), 30)
    finally:
        await stop(again)
    assert [c.text for c in store.list_chunks(chat_id)] == ["made after the restart"]


async def test_trace_show_stats_and_replay_of_a_summary_run_from_the_cli(
    store: Store, tmp_path: Path, fake_provider: Any, capsys: Any
) -> None:
    from jupyter_agent.cli.main import main

    fake = fake_provider({"steps": [{"text": "- budget 4,200 EUR"}], "repeat": True})
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    s = scheduler(store, tmp_path, config_of(fake.base_url, tmp_path))
    try:
        add_turns(store, chat_id, 1, 5)
        s.kick(chat_id)
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    (run,) = store.list_runs(program="history@v1")[0]
    path = str(tmp_path / "runs" / f"{run.run_id}.jsonl")
    capsys.readouterr()
    assert main(["trace", "show", path]) == 0
    out = capsys.readouterr().out
    assert "summary of turns 1-5 (level 1)" in out
    assert "- budget 4,200 EUR" in out
    assert "no turn record" not in out
    assert main(["trace", "show", path, "--stats"]) == 0
    out = capsys.readouterr().out
    assert "classify" in out
    assert CLASSIFY_MODEL in out
    assert main(["replay", path]) == 0
    assert "identical" in capsys.readouterr().out


async def test_no_ready_tier_is_failing_until_one_is_configured(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "made once a tier is ready"}], "repeat": True})
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    add_turns(store, chat_id, 1, 5)
    ready: dict[str, dict[str, Any]] = {}  # what the server has ready: nothing yet
    s = scheduler(
        store,
        tmp_path,
        lambda agent="agent", owner="": RunConfig(tiers=dict(ready), ceilings={}, spaces={}),
        first_backoff_s=0.2,
        max_backoff_s=0.2,
    )
    try:
        s.kick(chat_id)
        deadline = asyncio.get_running_loop().time() + 20
        while s.status()["failing"] == 0:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        status = s.status()
        assert status["pending"] == 1
        assert "no ready classify or codegen tier" in status["last_error"]
        assert fake.requests == []
        assert store.list_runs(program="history")[0] == []  # no run per retry of a setting
        ready.update(tiers(fake.base_url, classify=False))  # the admin sets a key
        await asyncio.wait_for(s.idle(), 20)
    finally:
        await stop(s)
    assert [c.text for c in store.list_chunks(chat_id)] == ["made once a tier is ready"]
    assert s.status()["failing"] == 0


async def test_a_span_that_keeps_failing_is_set_aside_and_later_chunks_still_come(
    store: Store, tmp_path: Path, fake_provider: Any
) -> None:
    from jupyter_agent.runtime.history.jobs import MAX_TRIES

    # The first chunk's request is refused every time (as one too big for the model);
    # the second chunk's is answered.
    refused = {"expect": {"last_user_contains": "number 111"}, "error": {"status": 400}}
    fake = fake_provider([refused] * MAX_TRIES + [{"text": "chunk two noted"}])
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    s = scheduler(
        store, tmp_path, config_of(fake.base_url, tmp_path), first_backoff_s=0.05,
        max_backoff_s=0.05,
    )  # fmt: skip
    try:
        add_turns(store, chat_id, 1, 10)
        s.kick(chat_id)
        await asyncio.wait_for(s.idle(), 30)
    finally:
        await stop(s)
    (chunk,) = store.list_chunks(chat_id)
    assert (chunk.first_turn, chunk.last_turn, chunk.text) == (6, 10, "chunk two noted")
    assert fake.remaining == 0
    assert s.status()["failing"] == 1  # visible: turns 1-5 have no summary
    assert store.turn_count(chat_id) == 10


def test_a_huge_turn_is_summarised_from_its_head_and_tail(store: Store) -> None:
    from jupyter_agent.core.history.chunks import ChunkSpan
    from jupyter_agent.core.tokens import count_tokens
    from jupyter_agent.runtime.history.jobs import ITEM_TOKENS, build_job

    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    add_turns(store, chat_id, 1, 5)
    turn = store.list_turns(chat_id)[2]
    store.delete_chat(chat_id)
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    from dataclasses import replace

    for n, t in enumerate([turn] * 5):
        big = "HEAD " + "x" * 200_000 + " TAIL" if n == 2 else "small"
        store.append_turn(
            replace(t, id=new_id("turn"), run_id=new_id("run"), chat_id=chat_id, user_text=big)
        )
    job = build_job(store, chat_id, ChunkSpan(1, 1, 5))
    assert all(count_tokens(item) <= ITEM_TOKENS for item in job.items)
    assert "HEAD" in job.items[2]
    assert "TAIL" in job.items[2]
    assert "left out" in job.items[2]


def test_a_demo_turn_is_summarised_as_the_demo_not_as_the_models_words(store: Store) -> None:
    from dataclasses import replace

    from jupyter_agent.core.demo import DEMO_MODEL, DEMO_STAND_IN
    from jupyter_agent.core.history.chunks import ChunkSpan
    from jupyter_agent.runtime.history.jobs import build_job

    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    add_turns(store, chat_id, 1, 3)
    turns = store.list_turns(chat_id)
    store.delete_chat(chat_id)
    chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
    for n, t in enumerate(turns):
        demo = n == 1
        store.append_turn(
            replace(
                t,
                id=new_id("turn"),
                run_id=new_id("run"),
                chat_id=chat_id,
                model=DEMO_MODEL if demo else t.model,
                replies=(Reply(text="This was the offline demo model.", done=True),)
                if demo
                else t.replies,
            )
        )
    job = build_job(store, chat_id, ChunkSpan(1, 1, 3))
    assert DEMO_STAND_IN in job.items[1]
    assert "message 2" in job.items[1]  # the person's words stay
    assert "offline demo model." not in " ".join(job.items)
    assert "reply 1: noted 111" in job.items[0]
