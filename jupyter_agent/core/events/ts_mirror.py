"""The TypeScript mirror of the events and steps: ``labextension/src/events.ts``, generated.

:func:`render` turns the dataclasses of :mod:`jupyter_agent.core.events.types` and
:mod:`jupyter_agent.core.events.steps` into one TypeScript module: an interface per type (its wire
keys, in order, with their types), the unions (``AgentEvent``, ``RunStep``), the tags in
order (``EVENT_TYPES``, ``STEP_TYPES``) and ``LIVE_ONLY``. The panel imports it; nothing in
it is written by hand.
``python -m jupyter_agent.core.events.ts_mirror > labextension/src/events.ts``
writes it; ``tests/core/test_events.py`` fails when the committed file differs.

Type mapping: ``str`` string, ``int``/``float`` number, ``bool`` boolean, ``None`` null,
``Literal`` a union of literals, ``tuple[X, ...]``/``list[X]`` ``X[]``, ``dict[str, Any]``
``{ [key: string]: any }``, ``Any`` any. A field with a default may be missing from old
data; the interfaces still name it as present (the server always writes it).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, Union

from jupyter_agent.codec import wire_names
from jupyter_agent.core.events import steps as st
from jupyter_agent.core.events import types as ev

__all__ = ["interface_name", "main", "render", "ts_type"]

_HEADER = """\
/**
 * The agent's events and a run's steps, as the server sends them.
 *
 * GENERATED from jupyter_agent/core/events/types.py and jupyter_agent/core/events/steps.py by
 * `python -m jupyter_agent.core.events.ts_mirror > labextension/src/events.ts`: do not edit.
 * tests/core/test_events.py fails when this file differs from the generated text.
 */

/** The fields every event has. */
export interface IEventEnvelope {
  type: string;
  chat_id: string;
  run_id: string;
  seq: number;
}
"""


def ts_type(tp: Any) -> str:
    """The TypeScript type of a Python field type (see the module docstring)."""
    if tp is Any:
        return "any"
    if tp is type(None) or tp is None:
        return "null"
    if tp is str:
        return "string"
    if tp is bool:
        return "boolean"
    if tp in (int, float):
        return "number"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return ts_type(args[0])
    if origin is Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin in (Union, types.UnionType):
        return " | ".join(ts_type(a) for a in args)
    if origin in (tuple, list):
        inner = ts_type(args[0]) if args else "any"
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return "{ [key: string]: " + (ts_type(args[1]) if args else "any") + " }"
    if dataclasses.is_dataclass(tp):
        return interface_name(tp)  # type: ignore[arg-type]
    raise TypeError(f"no TypeScript type for {tp!r}")


def interface_name(cls: type) -> str:
    """``RunStart`` -> ``IRunStartEvent``, ``CellStep`` -> ``ICellStep``."""
    name = cls.__name__
    if cls in st.STEPS:
        return f"I{name}"
    return f"I{name}" if name.endswith("Event") else f"I{name}Event"


def _doc(cls: type) -> str:
    text = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(text.split()).replace("``", "`")


def _interface(cls: type, *, extends: str | None) -> list[str]:
    hints = typing.get_type_hints(cls, include_extras=True)
    names = wire_names(cls)
    head = f"export interface {interface_name(cls)}"
    lines = [f"/** {_doc(cls)} */", head + (f" extends {extends} {{" if extends else " {")]
    lines.append(f"  type: {json.dumps(ev.event_type(cls))};")
    for name, key in names.items():
        lines.append(f"  {key}: {ts_type(hints[name])};")
    lines.append("}")
    return lines


def _tags(name: str, classes: Sequence[type], doc: str) -> list[str]:
    tags = ", ".join(json.dumps(ev.event_type(c)) for c in classes)
    return [f"/** {doc} */", f"export const {name} = [{tags}] as const;"]


def _union(name: str, classes: Sequence[type], doc: str) -> list[str]:
    members = "\n".join(f"  | {interface_name(c)}" for c in classes)
    return [f"/** {doc} */", f"export type {name} =\n{members};"]


def render() -> str:
    """The text of ``labextension/src/events.ts``."""
    out: list[str] = [_HEADER]
    for name in ("CellKind", "CellStatus"):
        out.append(f"export type {name} = {ts_type(getattr(ev, name))};\n")
    out.append(f"export type StepStatus = {ts_type(st.StepStatus)};\n")
    out.append("// --- events ---\n")
    for cls in ev.EVENTS:
        out.append("\n".join(_interface(cls, extends="IEventEnvelope")) + "\n")
    out.append("\n".join(_union("AgentEvent", ev.EVENTS, "Any event.")) + "\n")
    order = "The event types, in the order a run emits them."
    out.append("\n".join(_tags("EVENT_TYPES", ev.EVENTS, order)) + "\n")
    live = ", ".join(json.dumps(t) for t in sorted(ev.LIVE_ONLY_TYPES))
    out.append(
        "/** The types delivered live only, never kept for `?since=` catch-up. */\n"
        f"export const LIVE_ONLY: ReadonlyArray<string> = [{live}];\n"
    )
    out.append("// --- steps (GET agent/runs/{run_id}: `steps`) ---\n")
    for step in st.STEPS:
        out.append("\n".join(_interface(step, extends=None)) + "\n")
    out.append("\n".join(_union("RunStep", st.STEPS, "Any step of a run.")) + "\n")
    out.append("\n".join(_tags("STEP_TYPES", st.STEPS, "The step types.")) + "\n")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    """Print :func:`render`'s text (``python -m jupyter_agent.core.events.ts_mirror``); no
    arguments."""
    if list(argv):
        print("usage: python -m jupyter_agent.core.events.ts_mirror > labextension/src/events.ts")
        return 2
    print(render(), end="")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
