"""A chat made from an exported notebook (``POST agent/chats/import``): its turns, read back.

An exported chat (:func:`jupyter_agent.trace.notebook.chat_notebook`; a one-turn export,
:func:`~jupyter_agent.trace.notebook.run_notebook`, too) names its runs in
``metadata.jupyter_agent`` (``runs``: each run's ``run_id``, ``model``, ``stopReason``,
``endCause``; a one-turn export is that one run's metadata itself) and marks each cell with
``metadata.jupyter_agent.kind`` and ``run_id``. One turn is made per run, from the cells of
that run, in notebook order:

- ``user`` cells: the message text (after the markdown head ``**User** · time``, its view
  and attachment lines); several are joined by a blank line;
- ``steering`` cells: the turn's steering messages (text and the time of the head);
- ``bubble`` and ``reply`` cells: its replies (progress ``done: false``, the final one
  ``done: true``), the agent's name from the head (``**ada** (reply)``).

That is what a later run's history window reads of a turn (messages and replies, see
:mod:`jupyter_agent.core.turns`): the cells' code and outputs stay in the notebook. A
turn's ``llm`` is the run's ``stopReason`` and ``endCause`` (``done`` when unknown), its
``model`` the run's. The new turns get new ids and new run ids (the notebook's run ids
name runs of another server, or of another owner here: an imported turn never points at
an effect log) and ``created`` = the import's time, in notebook order (their ids sort
them). Anything else (not a notebook, no ``metadata.jupyter_agent`` runs, no turn in it)
is :class:`~jupyter_agent.exceptions.BadRequest` ``not_an_export``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from jupyter_agent.core.turns import END_CAUSES, Reply, Steering, TurnLLM, TurnRecord
from jupyter_agent.exceptions import BadRequest

__all__ = ["import_title", "imported_turns"]

_STOPS: Final = frozenset({"done", "wrapup", "break_hard", "error"})
_AGENT_HEAD: Final = re.compile(r"^\*\*(.+?)\*\* \((?:reply|progress)\)")


def _refuse(why: str) -> BadRequest:
    return BadRequest(
        f"not an exported chat notebook: {why} (export one with 'Export chat as notebook')",
        reason="not_an_export",
    )


def _meta(node: Any) -> dict[str, Any]:
    meta = node.get("metadata") if isinstance(node, Mapping) else None
    agent = meta.get("jupyter_agent") if isinstance(meta, Mapping) else None
    return dict(agent) if isinstance(agent, Mapping) else {}


def _runs(notebook: Any) -> list[dict[str, Any]]:
    if not isinstance(notebook, Mapping) or notebook.get("nbformat") != 4:
        raise _refuse("it is not an nbformat 4 notebook")
    if not isinstance(notebook.get("cells"), list):
        raise _refuse("it has no cell list")
    meta = _meta(notebook)
    runs = meta.get("runs") if "runs" in meta else ([meta] if meta.get("run_id") else None)
    if not isinstance(runs, list):
        raise _refuse("its metadata names no jupyter-agent runs")
    return [dict(r) for r in runs if isinstance(r, Mapping) and isinstance(r.get("run_id"), str)]


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source")
    return "".join(map(str, source)) if isinstance(source, list) else str(source or "")


def _split(source: str) -> tuple[str, str]:
    """(the head, the text): the exporter writes the head's lines, a blank line, the text."""
    head, _, text = source.partition("\n\n")
    return head, text


def _at(head: str) -> str:
    first = head.split("\n", 1)[0]
    return first.partition(" · ")[2].strip()


def import_title(notebook: Any) -> str:
    """The exported chat's title (metadata, else its ``# title`` cell), "" when none."""
    title = _meta(notebook).get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for cell in notebook.get("cells", []) if isinstance(notebook, Mapping) else []:
        if isinstance(cell, Mapping) and cell.get("id") == "title":
            return _source(cell).lstrip("#").strip()
    return ""


def imported_turns(
    notebook: Any, *, chat_id: str, now: str, make_id: Callable[[str], str]
) -> list[TurnRecord]:
    """The turns of ``notebook`` for the new chat ``chat_id`` (module docstring), ids from
    ``make_id("turn")`` and ``make_id("run")``; BadRequest ``not_an_export`` when it is no
    exported chat or holds no turn."""
    runs = _runs(notebook)
    parts: dict[str, dict[str, Any]] = {
        r["run_id"]: {"user": [], "steering": [], "replies": [], "agent": None} for r in runs
    }
    for cell in cast("list[Any]", notebook["cells"]):
        meta = _meta(cell)
        part = parts.get(str(meta.get("run_id")))
        kind = meta.get("kind")
        if part is None or cell.get("cell_type") != "markdown":
            continue
        head, text = _split(_source(cell))
        if kind == "user":
            part["user"].append(text)
        elif kind == "steering":
            part["steering"].append(Steering(text=text, at=_at(head)))
        elif kind in ("bubble", "reply"):
            part["replies"].append(Reply(text=text, done=kind == "reply"))
            found = _AGENT_HEAD.match(head)
            part["agent"] = part["agent"] or (found.group(1) if found else None)
    turns = []
    for run in runs:
        part = parts[run["run_id"]]
        if not part["user"] and not part["replies"]:
            continue  # a run the notebook shows nothing of
        stop, cause = run.get("stopReason"), run.get("endCause")
        model = run.get("model")
        turns.append(
            TurnRecord(
                id=make_id("turn"),
                chat_id=chat_id,
                run_id=make_id("run"),
                user_text="\n\n".join(part["user"]),
                steering=tuple(part["steering"]),
                replies=tuple(part["replies"]),
                from_agent=part["agent"] or "agent",
                created=now,
                model=model if isinstance(model, str) else None,
                llm=TurnLLM(
                    stop_reason=stop if stop in _STOPS else "done",
                    end_cause=cause if cause in END_CAUSES else "done",
                ),
            )
        )
    if not turns:
        raise _refuse("it holds no turn (no message or reply of a run)")
    return turns
