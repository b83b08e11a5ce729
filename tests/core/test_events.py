"""One vocabulary: every event and step type has one Python definition (the tagged
dataclasses of ``core/events/types.py`` and ``core/events/steps.py``) and one matching TypeScript
definition, the generated ``labextension/src/events.ts`` (which must not drift)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_agent.codec import dump_dict, load, wire_names
from jupyter_agent.core.events import steps as st
from jupyter_agent.core.events import types as ev
from jupyter_agent.core.events.ts_mirror import interface_name, render
from jupyter_agent.runtime.events import EVENT_FIELDS, LIVE_ONLY, EventBus

TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "events.ts"
ALL = (*ev.EVENTS, *st.STEPS)


def test_the_committed_typescript_is_the_generated_text() -> None:
    assert TS.read_text(encoding="utf-8") == render(), (
        "labextension/src/events.ts is stale: run "
        "`python -m jupyter_agent.core.events.ts_mirror > labextension/src/events.ts`"
    )


def test_the_generator_command_prints_the_text() -> None:
    # The command the file's header and CONTRIBUTING.md name, run as a reader would.
    env = {**os.environ, "PYTHONPATH": str(TS.parents[2])}
    command = [sys.executable, "-m", "jupyter_agent.core.events.ts_mirror"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == render()
    refused = subprocess.run(
        [*command, "--ts"], capture_output=True, text=True, env=env, timeout=60
    )
    assert refused.returncode == 2
    assert "usage:" in refused.stdout


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_each_type_has_one_matching_typescript_interface(cls: type) -> None:
    text = TS.read_text(encoding="utf-8")
    blocks = re.findall(rf"export interface {interface_name(cls)}\b[^{{]*\{{(.*?)\n\}}", text, re.S)
    assert len(blocks) == 1, f"{interface_name(cls)} defined {len(blocks)} times"
    keys = re.findall(r"^  (\w+):", blocks[0], re.M)
    assert keys == ["type", *wire_names(cls).values()]
    assert f'type: "{ev.event_type(cls)}";' in blocks[0]


def test_tags_are_unique_and_listed_in_order() -> None:
    event_tags = [ev.event_type(c) for c in ev.EVENTS]
    step_tags = [ev.event_type(c) for c in st.STEPS]
    assert len(set(event_tags)) == len(event_tags)
    assert len(set(step_tags)) == len(step_tags)
    text = TS.read_text(encoding="utf-8")
    assert (
        f"export const EVENT_TYPES = [{', '.join(map(repr, event_tags))}]".replace("'", '"') in text
    )
    assert list(EVENT_FIELDS) == event_tags
    assert set(LIVE_ONLY) == {"delta", "retry"}


def test_event_fields_are_derived_from_the_dataclasses() -> None:
    for cls in ev.EVENTS:
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        assert EVENT_FIELDS[ev.event_type(cls)] == tuple(names)  # snake_case: name is key
        assert all(re.fullmatch(r"[a-z_]+", n) for n in names), names


def test_events_and_steps_read_back_by_their_tag() -> None:
    end = ev.CellEnd(
        cell_id="c1", kind="bash", status="ok", error=False, digest="$ ls", duration_s=1
    )
    data = dump_dict(end)
    assert data["type"] == "cell_end"
    assert data["duration_s"] == 1.0
    assert data["outputs"] is None  # the other kind's fields are present, null
    assert load(ev.Event, data) == end
    step = st.ReplyStep(seq=3, text="hi", t="x", status="ok", message_id="msg_1")
    assert load(st.Step, dump_dict(step)) == step


def test_the_bus_publishes_the_envelope_then_the_fields() -> None:
    bus = EventBus()
    wire = bus.publish("chat_1", "run_1", ev.RunEnd(stop_reason="done", end_cause="done", turn={}))
    assert list(wire) == ["type", "chat_id", "run_id", "seq", "stop_reason", "end_cause", "turn"]
    assert wire["seq"] == 1
    bus.publish("chat_1", "run_1", ev.Delta(text="live only"))
    assert [e["type"] for e in bus.since("chat_1", 0)] == ["run_end"]
