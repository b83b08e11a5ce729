"""Export runs as notebooks: a turn (:func:`run_notebook`) or a whole chat (:func:`chat_notebook`).

The notebook is nbformat v4 and valid: built with nbformat's ``new_notebook`` and
``new_output``, cells in the exact shape of its ``new_code_cell`` / ``new_markdown_cell``,
and validated once as a whole (a recorded output that breaks the schema is replaced by a
stderr note saying so). It re-runs top to bottom in a fresh agent kernel (kernel
``jupyter-agent``, nbclient say) with no server and no model: its first code cell, hidden
(id ``replay-setup``, :mod:`jupyter_agent.trace.notebook_setup`), installs the runs' record
of app calls and cell names, so the cells' app calls get their recorded answers and
``values.get`` finds the named cells' values. Tags: a cell that raised has
``raises-exception``; one a hard stop cut, timed out, unfinished or that could not run,
and the synthetic recall cell, have ``skip-execution``. Then cells, in the order they
happened (see :mod:`jupyter_agent.trace.cells_view`):

- a markdown cell for the user's message: time, the view (path, cell, selection) and the
  names of the attachments; steering messages and breaks as markdown where they arrived;
- a code cell per ``run_cell`` with the recorded outputs (nbformat's shapes, kept as
  recorded: no path rewriting) and execution count; its id is the run's ``cell_id``, so
  ``values.get("c3", ...)`` in a later cell still names the right cell;
- a code cell ``sh('<command>', timeout=N)`` per ``bash`` call (the argument is the
  command's ``repr``, so re-running it in the agent kernel rebinds ``sh.last``), with its
  stdout and stderr as stream outputs; its id is the next ``c<n>`` of the run's counter;
- what autorecall showed the model before the message (``toolcaller@v4``): a markdown
  cell "Recalled (synthetic: not run)" and the synthetic ``memory.search(...)`` code cell
  (metadata ``synthetic: true``, ``program: autorecall@v1``), its result as the stream
  output, before the turn's first real cell (:mod:`jupyter_agent.trace.notebook_marks`);
- markdown cells for progress bubbles and the final reply;
- a markdown cell per wait for the person (an ``approval.wait``: what waited, how it ended;
  an MCP call's code) and per notice the run took (:mod:`jupyter_agent.trace.notebook_marks`);
- a markdown note for what did not finish normally: a cancelled, timed-out, failed or
  unfinished effect, a hard break, an error or wrap-up end, a log that stops mid-run. A
  cell or command a hard break cut keeps the output it printed until then (status
  ``cancelled``, no digest: the model read none); one that ran past its timeout has status
  ``timed_out``.

Ids: code cells ``<prefix>c<n>``; markdown cells ``<prefix><code id>-md<j>`` after a code
cell (``c3-md1``), ``<prefix>md<j>`` before the first one. A whole-chat notebook uses the
prefix ``t<k>-`` for turn k (from 1). Each cell's ``metadata.jupyter_agent`` holds its
``kind``, ``run_id``, ``seq``; code cells also ``cell_id`` (the run's), ``seqs`` (the
``cell.run`` seq then every effect nested under it), ``deterministic`` (no app call, no
bash, a recorded result), ``status`` and ``digest`` (the text the model read, recomputed
with the run's recorded digest options). The notebook's ``metadata.jupyter_agent`` holds
the run id, chat id, program, model, stopReason, endCause, usage, cost and fingerprints,
from the given turn record, else the log's ``turn.append``, else nulls.

The notebook metadata's ``kernelspec`` and ``language_info`` are exactly what JupyterLab
sets from a running agent kernel, so opening the notebook does not mark it modified.
Exported notebooks are not signed: they are untrusted, like any notebook from elsewhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from nbformat import NotebookNode

from jupyter_agent.core.events.steps import (
    ApprovalStep,
    BashStep,
    BreakStep,
    BubbleStep,
    CellStep,
    ModelCallStep,
    NoticeStep,
    RecallStep,
    ReplyStep,
    SteeringStep,
    UserStep,
)
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.trace.cells_view import RunView, build_view
from jupyter_agent.trace.log import TraceFile
from jupyter_agent.trace.notebook_marks import (
    CELL_ID,
    approval_meta,
    approval_source,
    notice_source,
    synthetic_meta,
    title_source,
)
from jupyter_agent.trace.notebook_nodes import (
    KERNELSPEC,
    count_of,
    from_dict,
    inline_code,
    new_code_cell,
    new_markdown_cell,
    new_output,
    notebook_of,
    output_node,
    sh_source,
    write_notebook,
)
from jupyter_agent.trace.notebook_setup import SETUP_ID, recorded_calls, rerun_tag, setup_cell

__all__ = ["KERNELSPEC", "chat_notebook", "run_notebook", "sh_source", "write_notebook"]

_CELL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_END_NOTES: Final = {
    "length": "the model's reply hit its output limit",
    "ceiling:model_calls": "the run used all the model calls it is allowed",
    "ceiling:cells": "the run ran all the cells it is allowed",
    "ceiling:wall_s": "the run used all the time it is allowed",
    "ceiling:cost_usd": "the run used all the budget it is allowed",
    "break_soft": "the user asked it to stop (soft break)",
    "break_hard": "a hard stop (Stop now) ended it at once",
    "error": "an error ended it",
    "restart": "the server restarted while it ran",
}


class _Builder:
    """Accumulates one run's cells with unique ids (shared across runs of a chat)."""

    def __init__(self, view: RunView, prefix: str, taken: set[str]) -> None:
        self.view = view
        self.prefix = prefix
        self.taken = taken
        self.cells: list[NotebookNode] = []
        self.anchor = ""  # the id of the last code cell, "" before the first
        self.md_count = 0
        self.agent = view.turn.from_agent if view.turn is not None else "agent"
        self.named: list[tuple[str, str]] = []  # (code, the run's name) of its agent cells

    # -- ids ------------------------------------------------------------------------------

    def _free(self, wanted: str) -> str:
        if _CELL_ID.match(wanted) and wanted not in self.taken:
            self.taken.add(wanted)
            return wanted
        n = 1
        while f"{self.prefix}x{n}" in self.taken:
            n += 1
        self.taken.add(f"{self.prefix}x{n}")
        return f"{self.prefix}x{n}"

    def _code_id(self, cell_id: str) -> str:
        cell_id = self._free(f"{self.prefix}{cell_id}")
        self.anchor, self.md_count = cell_id, 0
        return cell_id

    def _md_id(self) -> str:
        self.md_count += 1
        base = f"{self.anchor}-" if self.anchor else self.prefix
        return self._free(f"{base}md{self.md_count}")

    def _meta(
        self, kind: str, seq: int | None, tag: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        meta = {"kind": kind, "run_id": self.view.run_id, "seq": seq, **extra}
        # nbclient's tags: a recorded error is shown and the run goes on; a skipped cell
        # is one whose recorded run did not finish (it would not end as recorded)
        return {"jupyter_agent": from_dict(meta), **({"tags": [tag]} if tag else {})}

    # -- cells ----------------------------------------------------------------------------

    def markdown(self, source: str, kind: str, seq: int | None, **extra: Any) -> None:
        meta = self._meta(kind, seq, **extra)
        cell = new_markdown_cell(source, id=self._md_id(), metadata=meta)
        self.cells.append(cell)

    def note(self, text: str, seq: int | None) -> None:
        self.markdown("> **Note:** " + text.replace("\n", "\n> "), "note", seq)

    def message(self, step: UserStep | SteeringStep) -> None:
        who = "User" if step.type == "user" else "User (mid-run)"
        lines = [f"**{who}**" + (f" · {step.at}" if step.at else "")]
        lines.extend(_view_lines(step.view))
        if step.attachments:
            lines.append("Attachments: " + ", ".join(inline_code(n) for n in step.attachments))
        source = "  \n".join(lines) + "\n\n" + step.text
        self.markdown(source.rstrip("\n"), step.type, step.seq)

    def post(self, step: BubbleStep | ReplyStep) -> None:
        label = "reply" if step.type == "reply" else "progress"
        head = f"**{self.agent}** ({label})" + (f" · {step.t}" if step.t else "")
        self.markdown(f"{head}\n\n{step.text}", step.type, step.seq)
        if step.status == "cancelled":
            self.note("A hard stop cancelled this message before it was delivered.", step.seq)
        elif step.status in ("failed", "unfinished"):
            self.note(f"This message was not delivered ({step.status}).", step.seq)

    def python(self, step: CellStep) -> None:
        outputs = [output_node(o) for o in step.outputs]
        extra: dict[str, Any] = {
            "cell_id": step.cell_id,
            "seqs": list(step.seqs),
            "deterministic": step.deterministic,
            "status": step.status,
            "digest": step.digest,  # what the model read (the recorded digest)
        }
        if step.duration_s is not None:  # a (whole or partial) result was recorded
            extra["duration_s"] = step.duration_s
            extra["outputs_truncated"] = step.outputs_truncated
        cell = new_code_cell(
            step.code,
            id=self._code_id(step.cell_id or "c"),
            execution_count=count_of(step.execution_count),
            metadata=self._meta(
                "python", step.seq, rerun_tag(step.status, raised=bool(step.failed)), **extra
            ),
        )
        self.named.append((step.code, step.cell_id))
        cell.outputs = outputs  # checked by the one whole-notebook validation (_notebook)
        self.cells.append(cell)
        self._status_note("cell", step.status, step.error, step.seq, step.timeout_s, bool(outputs))
        for line in step.copies:  # what the cell copied from the person's kernel
            self.note(f"The cell {line}.", step.seq)

    def bash(self, step: BashStep) -> None:
        outputs = []
        for name, text in (("stdout", step.stdout), ("stderr", step.stderr)):
            if text:
                outputs.append(new_output("stream", name=name, text=text))
        extra: dict[str, Any] = {
            "cell_id": step.cell_id,
            "seqs": [step.seq],
            "deterministic": False,
            "status": step.status,
            "digest": step.digest,
        }
        if step.duration_s is not None:
            extra.update(
                returncode=step.returncode,
                timed_out=step.timed_out,
                duration_s=step.duration_s,
                outputs_truncated=step.outputs_truncated,
            )
        cell = new_code_cell(
            sh_source(step.command, step.timeout_s),
            id=self._code_id(step.cell_id),
            metadata=self._meta("bash", step.seq, rerun_tag(step.status), **extra),
        )
        cell.outputs = outputs
        self.cells.append(cell)
        self._status_note(
            "command", step.status, step.error, step.seq, step.timeout_s, bool(outputs)
        )

    def _status_note(
        self,
        what: str,
        status: str,
        error: dict[str, Any] | None,
        seq: int,
        timeout_s: float | None = None,
        has_output: bool = False,
    ) -> None:
        if status == "cancelled":
            kept = "; the output above is what it printed until then" if has_output else ""
            self.note(f"A hard stop cancelled this {what} while it ran (#{seq}){kept}.", seq)
        elif status == "timed_out":
            limit = f" {timeout_s:g} s" if timeout_s is not None else ""
            self.note(f"This {what} timed out: it ran past its{limit} timeout (#{seq}).", seq)
        elif status == "unfinished":
            self.note(f"The log ends while this {what} runs: no result was recorded (#{seq}).", seq)
        elif status == "failed" and error is not None:  # (one that raised shows its error)
            message = error.get("message") or error.get("type") or "unknown"
            self.note(f"The {what} could not run (#{seq}): {message}", seq)
        elif status == "unreadable":
            self.note(f"The recorded result of this {what} could not be read (#{seq}).", seq)

    def recall(self, step: RecallStep) -> None:
        if step.status in ("failed", "unfinished"):
            why = (step.error or {}).get("message") or step.status
            self.note(f"The recall search did not answer (#{step.seq}): {why}.", step.seq)
        if not step.code:  # nothing recalled: the model was shown nothing
            return
        self.markdown(title_source(step), "recall", step.seq)
        cell = new_code_cell(
            step.code,
            id=self._code_id(CELL_ID),
            metadata=self._meta("recall", step.seq, "skip-execution", **synthetic_meta(step)),
        )
        cell.outputs = [new_output("stream", name="stdout", text=step.text + "\n")]
        self.cells.append(cell)

    def model_call(self, step: ModelCallStep) -> None:
        if step.status == "cancelled":
            self.note(f"A hard stop cancelled a model call (#{step.seq}).", step.seq)
        elif step.status == "unfinished":
            self.note(f"The log ends during a model call (#{step.seq}).", step.seq)

    def build(self) -> list[NotebookNode]:
        for step in self.view.steps:
            if isinstance(step, (UserStep, SteeringStep)):
                self.message(step)
            elif isinstance(step, BreakStep):
                kind = "hard" if step.hard else "soft"
                self.note(
                    f"The user sent a {kind} break" + (f" at {step.at}." if step.at else "."),
                    step.seq,
                )
            elif isinstance(step, (BubbleStep, ReplyStep)):
                self.post(step)
            elif isinstance(step, CellStep):
                self.python(step)
            elif isinstance(step, BashStep):
                self.bash(step)
            elif isinstance(step, ModelCallStep):
                self.model_call(step)
            elif isinstance(step, RecallStep):
                self.recall(step)
            elif isinstance(step, ApprovalStep):
                self.markdown(approval_source(step), "approval", step.seq, **approval_meta(step))
            elif isinstance(step, NoticeStep):
                self.markdown(notice_source(step), "notice", step.seq)
        self.end_note()
        return self.cells

    def end_note(self) -> None:
        view = self.view
        turn = view.turn
        if view.truncated:
            self.note("The log's last line was cut short (the run crashed mid-write).", None)
        if turn is None:
            if view.unfinished:
                last = view.unfinished[-1]
                self.note(
                    f"The run has no turn record: the log stops at #{last.seq} ({last.name}), "
                    "which has no result (the run crashed or is still running).",
                    last.seq,
                )
            else:
                self.note("The run has no turn record: it did not finish.", None)
            return
        stop, cause = turn.llm.stop_reason, turn.llm.end_cause
        if stop == "done":
            return
        why = _END_NOTES.get(cause, cause)
        if stop == "wrapup":
            text = f"The run wrapped up early: {why}."
        elif stop == "break_hard":
            text = "The run was stopped by a hard stop (Stop now)."
        else:
            text = f"The run ended with an error ({cause}): {why}."
        self.note(text + f" (stopReason `{stop}`, endCause `{cause}`)", None)


def _view_lines(view: dict[str, Any] | None) -> list[str]:
    if not view:
        return []
    parts = []
    if view.get("path"):
        parts.append(inline_code(str(view["path"])))
    if view.get("cell") is not None:
        parts.append(f"cell {inline_code(str(view['cell']))}")
    selection = view.get("selection")
    if selection:
        text = selection if isinstance(selection, str) else json.dumps(selection)
        parts.append("selection " + inline_code(" ".join(text.split())[:200]))
    return ["Viewing " + " · ".join(parts)] if parts else []


def _run_metadata(view: RunView, turn: TurnRecord | None) -> dict[str, Any]:
    llm = turn.llm.to_json() if turn is not None else {}
    return {
        "run_id": view.run_id,
        "chat_id": view.chat_id,
        "program": view.header.get("program"),
        "model": view.model,
        "turn_id": turn.id if turn is not None else None,
        "created": turn.created if turn is not None else view.header.get("created"),
        "stopReason": llm.get("stopReason"),
        "endCause": llm.get("endCause"),
        "usage": llm.get("usage"),
        "cost": llm.get("cost"),
        "fingerprints": llm.get("fingerprints"),
    }


def _view(trace: TraceFile, turn: TurnRecord | None) -> tuple[RunView, TurnRecord | None]:
    view = build_view(trace)
    return view, turn if turn is not None else view.turn


def run_notebook(
    trace: TraceFile,
    *,
    turn: TurnRecord | None = None,
    cell_prefix: str = "",
    blobs_dir: Path | None = None,
) -> NotebookNode:
    """One run as a notebook (see the module docstring); ``turn`` overrides the log's;
    ``blobs_dir``: the folder of the run's log, where its ``blobs/`` are (none: no
    ``notebook.fetch`` copy is carried)."""
    view, record = _view(trace, turn)
    builder = _Builder(_with_turn(view, record), cell_prefix, {SETUP_ID})
    cells = builder.build()
    setup = setup_cell(recorded_calls(trace, blobs_dir), builder.named)
    return notebook_of([setup, *cells], _run_metadata(view, record))


def chat_notebook(
    traces: Sequence[tuple[TraceFile, TurnRecord | None]],
    *,
    title: str = "",
    forked_from: Mapping[str, Any] | None = None,
    blobs_dir: Path | None = None,
) -> NotebookNode:
    """A whole chat, oldest run first: turn k's cells are ``t<k>-c<n>``, ``t<k>-md<j>``, ...

    A title becomes a first markdown cell (id ``title``); a fork's origin the next one (id
    ``origin``); then the setup cell (all the runs' record; ``blobs_dir`` as for
    :func:`run_notebook`). ``metadata.jupyter_agent`` holds ``chat_id``, ``title``, ``runs`` (each
    run's metadata, as :func:`run_notebook`'s) and, for a fork, ``forked_from``.
    """
    taken: set[str] = {SETUP_ID}
    cells: list[NotebookNode] = []
    calls: list[dict[str, Any]] = []
    named: list[tuple[str, str]] = []
    runs: list[dict[str, Any]] = []
    if title:
        taken.add("title")
        cells.append(new_markdown_cell(f"# {title}", id="title", metadata={}))
    if forked_from:
        taken.add("origin")
        said = (
            f"Forked from chat `{forked_from.get('chat_id')}` at turn {forked_from.get('turn')}:"
            " its turns up to there are this chat's first ones."
        )
        cells.append(new_markdown_cell(said, id="origin", metadata={}))
    for k, (trace, turn) in enumerate(traces, start=1):
        view, record = _view(trace, turn)
        builder = _Builder(_with_turn(view, record), f"t{k}-", taken)
        cells.extend(builder.build())
        calls.extend(recorded_calls(trace, blobs_dir))
        named.extend(builder.named)
        runs.append(_run_metadata(view, record))
    if runs:  # a chat with no run has nothing to re-run: no setup cell
        heads = sum(1 for c in cells if c.id in ("title", "origin"))
        cells.insert(heads, setup_cell(calls, named))
    chat_ids = [r["chat_id"] for r in runs if r["chat_id"]]
    meta = {"chat_id": chat_ids[0] if chat_ids else None, "title": title or None, "runs": runs}
    if forked_from:
        meta["forked_from"] = dict(forked_from)
    return notebook_of(cells, meta)


def _with_turn(view: RunView, turn: TurnRecord | None) -> RunView:
    return view if turn is view.turn else replace(view, turn=turn)
