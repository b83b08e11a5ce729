"""What ``POST agent/chats/{id}/messages`` costs before its 202, through a real server: one
write transaction (the message, the run it opens, the chat's title) and no sync of a file
of its own (the effect log is created by the run, after the acknowledgement); concurrent
messages of several chats share their commit.

Counted with SQLAlchemy's ``commit`` event on the store's engine and counting wrappers of
``os.fsync`` / ``os.fdatasync``, read the moment the send returns (what the 202 answers).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import event

from jupyter_agent.runtime.runs.chat_service import ChatService
from jupyter_agent.store.memory.turn_indexer import THREAD_NAME
from jupyter_agent.trace.syncer import THREAD_NAME as SYNCER_THREAD
from tests.server.helpers import new_chat, wait_turn


@dataclass
class Counts:
    commits: int = 0
    fsyncs: int = 0


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "ok"}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


@pytest.fixture
def counts(agent_service: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    """Counts of commits and Python-level fsyncs from here on (every thread but the recall
    indexer's, which indexes stored turns after their runs, and the effect logs' group
    syncer's, whose periodic fdatasyncs of a run's log no writer waits for: under load one
    fell between a count and the 202 it was compared with)."""
    found = Counts()
    lock = threading.Lock()

    def committed(_conn: Any) -> None:
        if threading.current_thread().name == THREAD_NAME:
            return
        with lock:
            found.commits += 1

    def counting(real: Any) -> Any:
        def wrapper(fd: int) -> None:
            if threading.current_thread().name in (THREAD_NAME, SYNCER_THREAD):
                return real(fd)
            with lock:
                found.fsyncs += 1
            real(fd)

        return wrapper

    monkeypatch.setattr(os, "fsync", counting(os.fsync))
    monkeypatch.setattr(os, "fdatasync", counting(os.fdatasync))
    engine = agent_service.store._engine
    event.listen(engine, "commit", committed)
    yield found
    event.remove(engine, "commit", committed)


@pytest.fixture
def at_202(counts: Counts, monkeypatch: pytest.MonkeyPatch) -> list[Counts]:
    """The counts as each send returned (what its 202 answers), in the order they did."""
    seen: list[Counts] = []
    real = ChatService.send

    async def send(self: ChatService, *args: Any, **kw: Any) -> dict[str, Any]:
        answer = await real(self, *args, **kw)
        seen.append(Counts(counts.commits, counts.fsyncs))
        return answer

    monkeypatch.setattr(ChatService, "send", send)
    return seen


def _post(chat_id: str, text: str) -> dict[str, Any]:
    return {"method": "POST", "body": json.dumps({"text": text})}


@pytest.mark.parametrize("log_sync", ["run", "effect"])
def test_a_message_costs_one_commit_and_no_file_sync_before_its_202(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    fake: Any,
    log_sync: str,
    counts: Counts,
    at_202: list[Counts],
) -> None:
    manager = agent_service.manager
    manager.log_sync = log_sync  # the effect policy fsyncs a new log: after the 202 now
    untitled = new_chat(fetch)  # its first message names it: in the same transaction
    base = Counts(counts.commits, counts.fsyncs)
    response = fetch("agent", "chats", untitled, "messages", **_post(untitled, "name me please"))
    assert response.code == 202
    answer = json.loads(response.body)
    assert answer["routed"] == "run"
    assert at_202[0].commits - base.commits == 1
    assert at_202[0].fsyncs - base.fsyncs == 0
    # Durable at the 202: the message, the run and the title are stored.
    turn = wait_turn(fetch, spin, untitled, answer["run_id"])
    assert turn["userText"] == "name me please"
    assert agent_service.store.get_chat(untitled).title == "name me please"
    summary = agent_service.store.get_run(answer["run_id"])
    assert summary is not None
    assert summary.status == "done"
    # The log was created after the 202 (and synced under ``effect``).
    assert manager.log_path(answer["run_id"]).exists()
    if log_sync == "effect":
        assert counts.fsyncs - at_202[0].fsyncs >= 2  # the log and its folder entry
    # A message into an open run's mailbox: one commit too, no file synced.
    fake.load({"steps": [{"text": "slow", "delay_s": 3.0}], "repeat": True})
    chat = new_chat(fetch, "titled")
    first = json.loads(fetch("agent", "chats", chat, "messages", **_post(chat, "one")).body)
    _quiet(spin, counts)  # what the runs so far write and sync is done (the last one waits)
    before = Counts(counts.commits, counts.fsyncs)
    steer = json.loads(fetch("agent", "chats", chat, "messages", **_post(chat, "two")).body)
    assert steer["routed"] == "mailbox"
    assert at_202[-1].commits - before.commits == 1
    assert at_202[-1].fsyncs - before.fsyncs == 0
    wait_turn(fetch, spin, chat, first["run_id"])


def _quiet(spin: Any, counts: Counts, still_s: float = 0.3, limit_s: float = 2.5) -> None:
    """Wait until no commit or file sync was counted for ``still_s`` (a loaded machine
    may close the run before's log, or open the next one's, a few hundred ms late)."""
    deadline = time.monotonic() + limit_s
    last, since = (counts.commits, counts.fsyncs), time.monotonic()
    while time.monotonic() - since < still_s:
        assert time.monotonic() < deadline, "the counts never went quiet"
        spin(0.05)
        now = (counts.commits, counts.fsyncs)
        if now != last:
            last, since = now, time.monotonic()


def test_concurrent_messages_of_eight_chats_share_their_commits(
    fetch: Any,
    spin: Any,
    jp_fetch: Any,
    jp_asyncio_loop: Any,
    agent_service: Any,
    fake: Any,
    counts: Counts,
    at_202: list[Counts],
) -> None:
    chats = [new_chat(fetch, f"c{i}") for i in range(8)]
    base = counts.commits

    async def burst() -> list[Any]:
        calls = [
            jp_fetch("agent", "chats", c, "messages", **_post(c, f"hello {i}"))
            for i, c in enumerate(chats)
        ]
        return list(await asyncio.gather(*calls))

    responses = jp_asyncio_loop.run_until_complete(burst())
    assert [r.code for r in responses] == [202] * 8
    answers = [json.loads(r.body) for r in responses]
    assert len({a["run_id"] for a in answers}) == 8
    # Every 202 came after its commit; the eight took fewer than eight.
    assert max(c.commits for c in at_202) - base < 8
    for i, (chat, answer) in enumerate(zip(chats, answers, strict=True)):
        turn = wait_turn(fetch, spin, chat, answer["run_id"])
        assert turn["userText"] == f"hello {i}"
    assert agent_service.store.queued_mail() == []


def test_a_message_reads_the_store_once_before_its_write(
    fetch: Any, spin: Any, agent_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The chat (is it there, whose, its model) and the program activations' mark, in one
    # read transaction; the run it starts resolves its program with that mark (the
    # registry is current after the first run), then the one write transaction.
    first = new_chat(fetch, "warm")
    answer = json.loads(fetch("agent", "chats", first, "messages", **_post(first, "hi")).body)
    wait_turn(fetch, spin, first, answer["run_id"])
    chat = new_chat(fetch, "counted")
    begins: list[int] = []
    seen: list[int] = []

    def began(_conn: Any) -> None:
        if threading.current_thread().name != THREAD_NAME:  # the recall indexer's own
            begins.append(1)

    real = ChatService.send

    async def send(self: ChatService, *args: Any, **kw: Any) -> dict[str, Any]:
        answer = await real(self, *args, **kw)
        seen.append(len(begins))  # what the 202 answers after
        return answer

    monkeypatch.setattr(ChatService, "send", send)
    engine = agent_service.store._engine
    event.listen(engine, "begin", began)
    try:
        response = fetch("agent", "chats", chat, "messages", **_post(chat, "count me"))
    finally:
        event.remove(engine, "begin", began)
    assert response.code == 202
    assert seen == [2]  # one read, one write
    wait_turn(fetch, spin, chat, json.loads(response.body)["run_id"])
