"""A run's phase (runtime.loop.phase) and the mailbox items (runtime.runs.items): the
transitions the host makes, the illegal ones refused, and items that read back as written."""

from __future__ import annotations

import pytest

from jupyter_agent.runtime.loop.phase import IllegalTransition, RunLifecycle, RunPhase
from jupyter_agent.runtime.runs.mailbox import (
    BreakItem,
    Mailbox,
    MessageItem,
    NoticeItem,
    item_from_json,
)
from jupyter_agent.runtime.runs.slots import ChatSlots


def test_an_open_run_closes_at_its_final_reply_then_stores_and_ends() -> None:
    run = RunLifecycle("run_1")
    assert (run.routed_here, run.takes_mail, run.breaking) == (True, True, False)
    run.move("close")
    assert run.phase is RunPhase.CLOSED
    assert (run.routed_here, run.takes_mail) == (False, False)
    run.move("store")
    run.move("end")
    assert run.phase is RunPhase.ENDED


def test_a_soft_break_stops_routing_but_the_run_still_drains() -> None:
    run = RunLifecycle("run_1")
    assert run.move("soft_break") is RunPhase.OPEN
    assert (run.routed_here, run.takes_mail, run.breaking) == (False, True, False)
    assert run.move("hard_break") is RunPhase.WRAPPING  # the break drains what was routed
    assert run.phase is RunPhase.BROKEN
    assert run.breaking
    run.move("close")  # the loop's end keeps it broken
    assert run.phase is RunPhase.BROKEN


def test_a_reserved_run_broken_before_it_starts_starts_broken() -> None:
    run = RunLifecycle("run_2", RunPhase.RESERVED)
    assert run.reserved
    run.move("soft_break")  # nothing to wrap up before its first model call: a hard one
    assert run.phase is RunPhase.BREAK_ASKED
    assert run.move("start") is RunPhase.BREAK_ASKED
    assert run.phase is RunPhase.OPEN


@pytest.mark.parametrize(
    ("phase", "move"),
    [
        (RunPhase.OPEN, "start"),  # started twice
        (RunPhase.STORED, "store"),  # its turn stored twice
        (RunPhase.RESERVED, "close"),  # closed before it ran
        (RunPhase.RESERVED, "store"),
        (RunPhase.ENDED, "close"),  # anything but a hard break after the end
        (RunPhase.ENDED, "end"),
        (RunPhase.ENDED, "soft_break"),
    ],
)
def test_an_illegal_transition_is_a_clear_internal_error(phase: RunPhase, move: str) -> None:
    run = RunLifecycle("run_3", phase)
    with pytest.raises(IllegalTransition, match=f"run run_3: cannot {move} a run that is"):
        run.move(move)  # type: ignore[arg-type]
    assert run.phase is phase  # nothing changed


def test_a_hard_break_of_an_ended_run_changes_nothing() -> None:
    run = RunLifecycle("run_4", RunPhase.ENDED)
    assert run.move("hard_break") is RunPhase.ENDED
    assert run.phase is RunPhase.ENDED


def test_items_are_written_and_read_back_in_the_recorded_key_order() -> None:
    message = {
        "kind": "message",
        "text": "hi",
        "at": "2026-01-01T00:00:00.000Z",
        "id": "msg_1",
        "view": {"path": "a.ipynb"},
        "attachments": [{"name": "x.png", "media_type": "image/png", "data": "AA=="}],
    }
    notice = {"kind": "notice", "text": "applied", "at": "2026-01-01T00:00:01.000Z", "id": "n"}
    brk = {"kind": "break", "hard": False, "at": "2026-01-01T00:00:02.000Z"}
    for raw in (message, notice, brk, {**notice, "later": 1}):
        item = item_from_json(raw)
        assert item is not None
        assert list(item.to_json().items()) == list(raw.items())
    assert item_from_json({"kind": "telepathy"}) is None
    assert MessageItem(text="t", at="a", id="m").to_json() == {
        "kind": "message",
        "text": "t",
        "at": "a",
        "id": "m",
    }


def test_a_drain_without_notices_leaves_them_queued() -> None:
    box = Mailbox()
    message = MessageItem(text="m", at="1", id="msg_1")
    notice = NoticeItem(text="n", at="2", id="ntc_1")
    box.put("c", notice)
    box.put("c", message)
    box.put("c", BreakItem(hard=False, at="3"))
    assert box.first_message("c") == message
    assert [type(i) for i in box.drain("c", notices=False)] == [MessageItem, BreakItem]
    assert box.drain("c") == [notice]


def test_the_run_index_follows_reservations_and_starts() -> None:
    slots = ChatSlots()
    slot = slots.slot("chat_1")
    nxt = slots.reserve(slot)
    assert slots.reserve(slot) is nxt  # one reservation per chat
    assert slots.of_run(nxt.run_id) is slot
    assert slots.reserved(nxt.run_id) is nxt
    assert slots.unreserve(slot) is nxt
    assert nxt.started.is_set()
    assert slots.of_run(nxt.run_id) is None
    assert slot.next is None
