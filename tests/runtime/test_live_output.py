"""The live output parts, pure: iopub to nbformat, the collector, the throttle; LiveCell."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jupyter_agent.runtime.kernels.live_output import (
    LiveCell,
    LiveThrottle,
    OutputCollector,
    output_from_iopub,
    output_size,
    truncation_marker,
)

pytestmark = pytest.mark.timeout(30)


def stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def display(png: str = "iVBOR") -> dict[str, Any]:
    return {"output_type": "display_data", "data": {"image/png": png}, "metadata": {}}


# --- iopub messages ----------------------------------------------------------------------


def test_iopub_messages_become_nbformat_outputs() -> None:
    assert output_from_iopub("stream", {"name": "stderr", "text": "x"}) == stream("x", "stderr")
    shown = output_from_iopub(
        "display_data",
        {"data": {"text/html": "<b>x</b>"}, "metadata": {}, "transient": {"display_id": "d1"}},
    )
    assert shown == {
        "output_type": "display_data",
        "data": {"text/html": "<b>x</b>"},
        "metadata": {},
        "transient": {"display_id": "d1"},
    }
    result = output_from_iopub(
        "execute_result", {"data": {"text/plain": "3"}, "execution_count": 2}
    )
    assert result == {
        "output_type": "execute_result",
        "data": {"text/plain": "3"},
        "metadata": {},
        "execution_count": 2,
    }
    error = output_from_iopub("error", {"ename": "E", "evalue": "v", "traceback": ["l1"]})
    assert error == {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["l1"]}
    assert output_from_iopub("clear_output", {"wait": True}) == {
        "output_type": "clear_output",
        "wait": True,
    }
    for other in ("status", "execute_input", "comm_msg"):
        assert output_from_iopub(other, {}) is None


def test_output_size_counts_the_strings() -> None:
    assert output_size(stream("abc")) == 3
    assert output_size(display("x" * 10)) == 10
    assert output_size({"output_type": "error", "evalue": "ab", "traceback": ["cd", "e"]}) == 5


# --- the collector -----------------------------------------------------------------------


def test_the_collector_merges_streams_and_keeps_order() -> None:
    c = OutputCollector()
    for out in (stream("a"), stream("b"), stream("!", "stderr"), display(), stream("c")):
        c.add(out)
    assert c.outputs == [stream("ab"), stream("!", "stderr"), display(), stream("c")]
    assert c.stream_text("stdout") == "abc"
    assert c.stream_text("stderr") == "!"
    assert not c.truncated


def test_the_collector_is_bounded_and_says_so() -> None:
    c = OutputCollector(max_outputs=3, text_cap=10)
    c.add(stream("12345678"))
    c.add(stream("abcdef"))  # only "ab" fits
    assert c.outputs == [stream("12345678ab")]
    assert c.truncated
    c = OutputCollector(max_outputs=2, text_cap=1000)
    c.add(display())
    c.add(stream("x", "stderr"))
    c.add(display())
    assert len(c.outputs) == 2
    assert c.truncated


def test_clear_output_empties_the_collector_and_updates_are_not_kept() -> None:
    c = OutputCollector()
    c.add(stream("frame 1"))
    c.add({"output_type": "clear_output", "wait": False})
    c.add(stream("frame 2"))
    c.add({"output_type": "update_display_data", "data": {}, "metadata": {}})
    assert c.outputs == [stream("frame 2")]


def test_collected_outputs_are_copies() -> None:
    c = OutputCollector()
    c.add(stream("a"))
    c.outputs[0]["text"] = "changed"
    assert c.outputs == [stream("a")]


# --- the throttle ------------------------------------------------------------------------


def test_the_first_output_goes_at_once_the_rest_coalesce_until_the_interval() -> None:
    t = LiveThrottle(min_interval_s=0.05)
    assert t.add(stream("1\n"), now=10.0) == [stream("1\n")]
    assert t.add(stream("2\n"), now=10.01) == []
    assert t.add(stream("3\n"), now=10.02) == []
    assert t.due() == pytest.approx(10.05)
    assert t.flush(10.05) == [stream("2\n3\n")]
    assert t.due() is None
    # Past the interval, an output goes at once again.
    assert t.add(stream("4\n"), now=11.0) == [stream("4\n")]


def test_many_prints_in_one_second_make_at_most_about_twenty_events() -> None:
    t = LiveThrottle(min_interval_s=0.05)
    released: list[dict[str, Any]] = []
    now = 0.0
    for i in range(10_000):  # 10,000 lines over one second
        now = i / 10_000
        released += t.add(stream(f"line {i}\n"), now)
        due = t.due()
        if due is not None and now >= due:
            released += t.flush(now)
    released += t.flush(now + 1)
    assert len(released) <= 22
    assert "".join(o["text"] for o in released) == "".join(f"line {i}\n" for i in range(10_000))


def test_streams_of_two_names_and_displays_keep_their_order() -> None:
    t = LiveThrottle()
    t.add(stream("x"), now=0.0)
    for out in (stream("a"), stream("b", "stderr"), stream("c", "stderr"), display(), stream("d")):
        assert t.add(out, now=0.01) == []
    assert t.flush(0.06) == [stream("a"), stream("bc", "stderr"), display(), stream("d")]


def test_a_clear_drops_what_was_pending_before_it() -> None:
    t = LiveThrottle()
    t.add(stream("frame 0"), now=0.0)
    for i in range(1, 50):
        t.add({"output_type": "clear_output", "wait": True}, now=0.001 * i)
        t.add(stream(f"frame {i}"), now=0.001 * i)
    assert t.flush(0.06) == [{"output_type": "clear_output", "wait": True}, stream("frame 49")]


def test_the_interval_backs_off_as_events_accumulate() -> None:
    t = LiveThrottle(min_interval_s=0.05, backoff_every=10, max_interval_s=1.0)
    assert t.interval() == pytest.approx(0.05)
    now = 0.0
    for _ in range(10):
        now += 1.0
        t.add(stream("x"), now)
    assert t.events == 10
    assert t.interval() == pytest.approx(0.1)
    for _ in range(100):
        now += 1.0
        t.add(stream("x"), now)
    assert t.interval() == pytest.approx(1.0)  # capped


def test_past_the_char_bound_one_marker_ends_the_live_output() -> None:
    t = LiveThrottle(max_chars=10)
    assert t.add(stream("12345678"), now=0.0) == [stream("12345678")]
    assert t.add(stream("abcdef"), now=1.0) == [stream("ab"), truncation_marker(10)]
    assert t.truncated
    assert t.add(stream("more"), now=2.0) == []
    assert t.due() is None
    assert t.chars == 10
    assert "live output cut" in truncation_marker(10)["text"]


def test_a_display_too_big_for_what_is_left_ends_it_with_the_marker() -> None:
    t = LiveThrottle(max_chars=100)
    assert t.add(display("x" * 150), now=0.0) == [truncation_marker(100)]


def test_past_the_event_bound_the_marker_is_the_last_event() -> None:
    t = LiveThrottle(max_events=5)
    released: list[dict[str, Any]] = []
    for i in range(20):
        released += t.add(stream(f"{i}"), now=float(i))
    assert len(released) == 5
    assert released[-1] == truncation_marker(t.max_chars)
    assert t.events == 5


# --- LiveCell: the throttle on an event loop ---------------------------------------------


async def test_live_cell_releases_pending_output_on_its_timer_and_drops_it_at_close() -> None:
    published: list[dict[str, Any]] = []
    live = LiveCell(published.append, throttle=LiveThrottle(min_interval_s=0.02))
    live.add(stream("a"))
    live.add(stream("b"))
    live.add(stream("c"))
    assert published == [stream("a")]
    for _ in range(200):  # the timer fires on its own
        if len(published) == 2:
            break
        await asyncio.sleep(0.01)
    assert published == [stream("a"), stream("bc")]
    live.add(stream("d"))
    live.add(stream("e"))
    live.close()  # the cell's end carries the final outputs: pending text is dropped
    await asyncio.sleep(0.05)
    assert stream("e") not in published
    live.add(stream("after"))
    assert published[-1] != stream("after")
    assert live.elapsed_s >= 0


def test_what_is_pending_between_flushes_is_bounded_too() -> None:
    t = LiveThrottle(max_chars=1000, max_events=50)
    t.add(stream("first"), now=0.0)
    for _ in range(100_000):  # a tight print loop within one interval: nothing goes out yet
        t.add(stream("x" * 100), now=0.001)
    assert t._pending_chars <= 1000 + 100
    released = t.flush(now=1.0)
    assert released[-1] == truncation_marker(t.max_chars)
    assert t.chars <= t.max_chars
