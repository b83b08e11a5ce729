"""The event bus's bounds: a run in progress kept whole, a byte-bounded tail of ended runs,
a global byte cap evicting the least recently active chats, nothing of a deleted chat, a
``gap`` for a ``since`` older than what was pruned, and seqs that never repeat."""

from __future__ import annotations

import json
from typing import Any

from traitlets.config import Config

from jupyter_agent.core.events.types import (
    CellEnd,
    CellOutput,
    CellStart,
    Delta,
    ReplyEvent,
    RunEnd,
    RunStart,
)
from jupyter_agent.runtime.events import GAP, EventBus

CHAT, OTHER = "chat_01A", "chat_01B"


def run(bus: EventBus, chat_id: str, run_id: str, *, reply: str, end: bool = True) -> list[Any]:
    """One chat-only run as the run manager and the driver publish it."""
    wires = [
        bus.publish(chat_id, run_id, RunStart(started="2025-01-01T00:00:00Z", text="hi")),
        bus.publish(chat_id, run_id, Delta(text=reply[:10])),
        bus.publish(chat_id, run_id, ReplyEvent(text=reply)),
    ]
    if end:
        wires.append(
            bus.publish(chat_id, run_id, RunEnd(stop_reason="done", end_cause="done", turn={}))
        )
        bus.end_run(chat_id, run_id)
    return wires


def size(wire: dict[str, Any]) -> int:
    return len(json.dumps(wire))


def test_sizes_are_the_encoded_json_of_kept_events() -> None:
    bus = EventBus()
    wires = run(bus, CHAT, "run_1", reply="é" * 100)  # escaped on the wire: 6 bytes each
    kept = [w for w in wires if w["type"] != "delta"]
    assert bus.chat_bytes(CHAT) == bus.kept_bytes == sum(size(w) for w in kept)
    assert bus.kept_bytes > 600
    assert bus.since(CHAT, 0) == kept


def test_a_run_in_progress_is_kept_whole_and_trimmed_to_the_tail_when_it_ends() -> None:
    bus = EventBus(tail_bytes=3000)
    run(bus, CHAT, "run_1", reply="a" * 2000)
    wires = run(bus, CHAT, "run_2", reply="b" * 2000, end=False)
    for i in range(5):  # far over the tail while it runs: nothing of it goes
        wires.append(bus.publish(CHAT, "run_2", ReplyEvent(text=f"{i}" * 2000)))
    kept = [w for w in wires if w["type"] != "delta"]
    assert [e for e in bus.since(CHAT, 0) if e["run_id"] == "run_2"] == kept
    assert bus.chat_bytes(CHAT) > 12_000
    end = bus.publish(CHAT, "run_2", RunEnd(stop_reason="done", end_cause="done", turn={}))
    bus.end_run(CHAT, "run_2")
    left = bus.since(CHAT, 0)
    assert bus.chat_bytes(CHAT) == sum(size(e) for e in left) <= 3000
    assert left[-1] == end  # the newest stay, the oldest went
    assert all(e["run_id"] == "run_2" for e in left)


def test_a_since_older_than_what_was_pruned_gets_a_gap_and_seqs_keep_counting() -> None:
    bus = EventBus(tail_bytes=1000)
    run(bus, CHAT, "run_1", reply="a" * 800)
    run(bus, CHAT, "run_2", reply="b" * 800)
    first_kept = bus.since(CHAT, 0)[0]["seq"]
    assert first_kept > 1
    gap = bus.gap(CHAT, 0)
    assert gap == {"type": GAP, "chat_id": CHAT, "since": 0, "pruned_through": first_kept - 1}
    assert bus.gap(CHAT, first_kept - 1) is None  # nothing it missed is gone
    nxt = run(bus, CHAT, "run_3", reply="c", end=False)
    assert nxt[0]["seq"] == 9  # 4 events a run: pruning never resets the counter
    assert bus.gap(OTHER, 0) is None


def test_a_cell_end_dropping_live_output_is_no_gap() -> None:
    bus = EventBus()
    bus.publish(CHAT, "run_1", CellStart(cell_id="c1", kind="python", code="print(1)"))
    out = {"output_type": "stream", "name": "stdout", "text": "1\n"}
    bus.publish(CHAT, "run_1", CellOutput(cell_id="c1", output=out))
    assert [e["type"] for e in bus.since(CHAT, 0)] == ["cell_start", "cell_output"]
    bus.publish(
        CHAT,
        "run_1",
        CellEnd(
            cell_id="c1",
            kind="python",
            status="ok",
            error=False,
            digest="1",
            duration_s=0.1,
            outputs=(out,),
        ),
    )
    kept = bus.since(CHAT, 0)
    assert [e["type"] for e in kept] == ["cell_start", "cell_end"]
    assert bus.kept_bytes == sum(size(e) for e in kept)
    assert bus.gap(CHAT, 0) is None


def test_forget_drops_a_chat_and_its_bytes() -> None:
    bus = EventBus()
    run(bus, CHAT, "run_1", reply="a" * 500)
    run(bus, OTHER, "run_2", reply="b" * 500)
    other = bus.chat_bytes(OTHER)
    bus.forget(CHAT)
    assert bus.since(CHAT, 0) == []
    assert bus.gap(CHAT, 0) is None
    assert bus.chats() == [OTHER]
    assert bus.kept_bytes == other


def test_forget_with_a_run_still_open_keeps_nothing_and_goes_when_it_ends() -> None:
    bus = EventBus()
    before = run(bus, CHAT, "run_1", reply="a" * 500, end=False)
    bus.forget(CHAT)
    assert bus.kept_bytes == 0
    late = bus.publish(
        CHAT, "run_1", RunEnd(stop_reason="break_hard", end_cause="break_hard", turn={})
    )
    assert late["seq"] == before[-1]["seq"] + 1  # its seq goes on while it runs
    assert bus.since(CHAT, 0) == []
    assert bus.kept_bytes == 0
    bus.end_run(CHAT, "run_1")
    assert bus.chats() == []
    assert CHAT not in bus._chats  # nothing left of it at all


def test_the_global_cap_evicts_the_least_recently_active_chats_first() -> None:
    bus = EventBus(max_bytes=20_000)
    chats = [f"chat_{i}" for i in range(6)]
    for i, chat_id in enumerate(chats):
        run(bus, chat_id, f"run_{i}", reply="x" * 4000)
    assert bus.kept_bytes <= 20_000
    held = bus.chats()
    assert held == chats[-len(held) :]  # the newest chats kept, the oldest gone
    assert len(held) < len(chats)
    assert bus.gap(chats[0], 0) is not None
    # A run in progress is never cut, even over the cap.
    open_run = run(bus, "chat_busy", "run_busy", reply="y" * 30_000, end=False)
    assert bus.since("chat_busy", 0) == [w for w in open_run if w["type"] != "delta"]
    assert bus.chats() == ["chat_busy"]


def test_traits_come_from_config() -> None:
    config = Config()
    config.EventBus.tail_bytes = 1234
    config.EventBus.max_bytes = 56789
    bus = EventBus(config=config)
    assert (bus.tail_bytes, bus.max_bytes) == (1234, 56789)
    assert (EventBus().tail_bytes, EventBus().max_bytes) == (16 * 1024, 8 * 1024 * 1024)


async def test_subscribers_get_every_event_and_leave_nothing_behind() -> None:
    bus = EventBus()
    with bus.subscribe(CHAT) as queue:
        wires = run(bus, CHAT, "run_1", reply="a")
        got = [queue.get_nowait() for _ in wires]
    assert got == wires  # live only ones included
    assert bus._subscribers == {}
