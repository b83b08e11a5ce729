"""A recorded host: an exported notebook re-runs in a fresh agent kernel with no server.

An exported run or chat (:mod:`jupyter_agent.trace.notebook`) starts with a hidden setup
cell calling :func:`play_recorded` with what the agent's cells needed from the host:

- ``calls``: every app call of the exported runs, in log order, as
  ``{"app", "method", "args", "reply"}`` (``reply`` in the wire shape of :mod:`.apps`:
  ``{ok, value, error, seq, mutation}``, plus ``payload`` for a ``notebook.fetch`` whose
  copy the export carries);
- ``cells``: each exported agent cell's ``{"code", "name"}`` (``name``: the run's cell
  name, ``c3``), in order.

:func:`play_recorded` installs a :class:`RecordedHost` on the running
:class:`~jupyter_agent.kernel.kernel.AgentKernel`. From then on an app call in a cell that
no jupyter-agent host runs is answered from ``calls`` (:meth:`RecordedHost.answer`), and an
ordinary execute whose code is exactly a recorded cell's runs as that named agent cell, so
``values.get("c3", 2)`` in a later cell finds its values. Nothing reaches a server or a
model: the notebook re-runs only what the agent ran.

Matching a call: the first unused entry with the same app, method and arguments (compared
as canonical JSON); else the first unused one with the same app and method; when every
matching entry was used, they are used again from the first (a second top-to-bottom run
answers as the first did). No entry for the app and method: :class:`AppCallError`. A batch
is answered item by item, an item without an entry failing alone.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.exceptions import AppCallError

__all__ = ["NotAnAgentKernel", "RecordedHost", "play_recorded"]


class NotAnAgentKernel(RuntimeError):
    """:func:`play_recorded` ran in a kernel that is not jupyter-agent's."""


def _canonical(args: Any) -> str:
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(args)


@dataclass
class _Entry:
    key: tuple[str, str]  # (app, method)
    args: str  # canonical JSON
    answer: Any
    used: bool = False


@dataclass
class _Pool:
    """Entries used at most once each, in order, then again from the first."""

    entries: list[_Entry] = field(default_factory=list)

    def take(self, key: tuple[str, str], args: str) -> _Entry | None:
        same = [e for e in self.entries if e.key == key]
        exact = [e for e in same if e.args == args]
        for group in (exact, same):
            for entry in group:
                if not entry.used:
                    entry.used = True
                    return entry
        group = exact or same
        if not group:
            return None
        for entry in group:  # all used: a new pass over this group
            entry.used = False
        group[0].used = True
        return group[0]


class RecordedHost:
    """Answers app calls and names cells from an exported notebook's record (module doc)."""

    def __init__(
        self, calls: Sequence[Mapping[str, Any]], cells: Sequence[Mapping[str, Any]]
    ) -> None:
        self._calls = _Pool()
        for call in calls:
            key = (str(call.get("app")), str(call.get("method")))
            reply = call.get("reply")
            answer = dict(reply) if isinstance(reply, Mapping) else {"ok": False}
            self._calls.entries.append(_Entry(key, _canonical(call.get("args") or {}), answer))
        self._cells = _Pool()
        for cell in cells:
            code = str(cell.get("code") or "")
            self._cells.entries.append(_Entry(("cell", code), "", str(cell.get("name") or "")))

    @property
    def call_count(self) -> int:
        """How many app calls the record holds."""
        return len(self._calls.entries)

    def cell_name(self, code: str) -> str | None:
        """The run's name of the recorded cell whose code is exactly ``code`` (the next one,
        in order, when several have it), or None for code the agent never ran."""
        entry = self._cells.take(("cell", code), "")
        return str(entry.answer) if entry is not None and entry.answer else None

    def answer(self, app: str, method: str, args: Any) -> dict[str, Any]:
        """The recorded reply to one call (a copy); AppCallError when none was recorded."""
        entry = self._calls.take((app, method), _canonical(args))
        if entry is None:
            raise AppCallError(
                f"no recorded answer for {app}.{method} in this notebook: it re-runs only "
                "what the agent ran"
            )
        return dict(entry.answer)

    def request(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A :class:`~.apps.HostChannel` request answered from the record (wire of
        :mod:`.apps`): one call's reply, or a batch's ``{"results": [...]}``."""
        if payload.get("jupyter_agent") == "batch":
            items = payload.get("items")
            results: list[dict[str, Any]] = []
            for item in items if isinstance(items, list) else []:
                item = item if isinstance(item, Mapping) else {}
                try:
                    results.append(
                        self.answer(str(item.get("app")), str(item.get("method")), item.get("args"))
                    )
                except AppCallError as err:  # one item's miss never hides the others
                    results.append({"ok": False, "error": str(err), "mutation": False})
            return {"results": results}
        return self.answer(str(payload.get("app")), str(payload.get("method")), payload.get("args"))


def play_recorded(data: Mapping[str, Any] | str) -> None:
    """Install the record (a mapping ``{"calls", "cells"}``, or its JSON text) on the
    running agent kernel (``kernel.recorded``), replacing any installed before.
    :class:`NotAnAgentKernel` in any other kernel (or outside one)."""
    record = json.loads(data) if isinstance(data, str) else data
    if not isinstance(record, Mapping):
        raise TypeError("play_recorded takes the record's mapping {calls, cells}")
    # Through importlib: IPython's typing of get_ipython differs between releases (8.x
    # neither exports it nor types it), and this one call must check under all of them.
    getipython = importlib.import_module("IPython.core.getipython")
    shell: object = getipython.get_ipython()
    install = getattr(getattr(shell, "kernel", None), "use_recorded", None)
    if not callable(install):
        raise NotAnAgentKernel(
            "this notebook was exported by jupyter-agent: its recorded app calls and cell "
            "names replay only in the agent kernel (kernel 'jupyter-agent'); cells that "
            "call no app still run here"
        )
    calls = record.get("calls")
    cells = record.get("cells")
    host = RecordedHost(
        calls if isinstance(calls, list) else [], cells if isinstance(cells, list) else []
    )
    install(host)
