"""Rich rendering of the trace verbs' answers (``trace ls``, ``trace show [--stats]``).

Everything here takes the REST JSON (:mod:`jupyter_agent.trace.show`,
:mod:`jupyter_agent.trace.stats`, run summaries) and prints it; nothing is fetched.
When stdout is not a terminal the width is fixed (:data:`PIPE_WIDTH`), so ids are never
cut by a narrow default.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jupyter_agent.trace.show import bound
from jupyter_agent.trace.wait_steps import approval_outcome

__all__ = [
    "PIPE_WIDTH",
    "approval_line",
    "plural",
    "render_ls",
    "render_show",
    "render_stats",
    "shown",
    "window_line",
]

PIPE_WIDTH: Final = 200
_SHOWN_CHARS: Final = 4000


_IRREGULAR: Final = {"try": "tries", "entry": "entries", "retry": "retries"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 try"``, ``"2 tries"``, ``"0 cells"``: the count and the word in the right form
    (``many`` overrides the plural; a few irregular ones are known)."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {many or _IRREGULAR.get(word) or word + 's'}"


def _console() -> Console:
    tty = sys.stdout.isatty()
    return Console(width=None if tty else PIPE_WIDTH, highlight=False, soft_wrap=not tty)


def shown(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """``value`` as indented JSON, long strings and lists cut, at most ``limit`` chars."""
    text = json.dumps(bound(value, max_string=400, max_items=20), indent=2, ensure_ascii=False)
    if len(text) > limit:
        text = text[:limit] + f"\n…[cut: {plural(len(text) - limit, 'more char')}]"
    return text


def _cost(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) else "?"


def _tokens(usage: dict[str, Any] | None) -> str:
    usage = usage or {}
    return f"{usage.get('in', 0)}/{usage.get('out', 0)}"


def render_ls(
    runs: list[dict[str, Any]], next_cursor: str | None = None, *, owners: bool = False
) -> None:
    """A table of run summaries (the ``runs`` of ``GET agent/runs``); ``owners``: with an
    ``owner`` column (an admin's listing of other owners' runs; "" shows as ``-``)."""
    console = _console()
    if not runs:
        console.print("No runs.")
        return
    table = Table(show_edge=False, header_style="bold")
    table.add_column("run", no_wrap=True)  # whole: a person copies it into `trace show`
    if owners:
        table.add_column("owner", overflow="fold")
    for name in ("chat", "program", "agent", "status", "stop/end", "model", "calls"):
        table.add_column(name, overflow="fold")
    table.add_column("cells")
    table.add_column("tokens in/out", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("started")
    for run in runs:
        stop = run.get("stopReason") or "-"
        end = run.get("endCause") or "-"
        first = [escape(str(run.get("run_id")))]
        if owners:
            first.append(escape(str(run.get("owner") or "-")))
        table.add_row(
            *first,
            escape(str(run.get("chat_id"))),
            escape(run_program(run)),
            escape(str(run.get("agent") or "agent")),
            escape(str(run.get("status"))),
            f"{stop}/{end}",
            escape(str(run.get("model") or "-")),
            str(run.get("modelCalls", 0)),
            str(run.get("cells", 0)),
            _tokens(run.get("usage")),
            _cost(run.get("cost")),
            escape(str(run.get("started") or "")),
        )
    console.print(table)
    if next_cursor:
        console.print(f"(more: --before {escape(next_cursor)})")


def run_program(run: dict[str, Any]) -> str:
    """The run program's ref text of a run summary's JSON: ``programs[0]`` (hashed, issue
    16) when it names the run's ``program``, else ``program`` (rows written before)."""
    program = str(run.get("program") or "-")
    programs = run.get("programs")
    first = programs[0] if isinstance(programs, list) and programs else None
    if isinstance(first, str) and first.split("#", 1)[0] == program:
        return first
    return program


def window_line(window: Any) -> str | None:
    """The turn's ``llm.window`` as ``history: 12 turns, 3 L1, 1 L2, 40 omitted, 1.8k
    tokens`` (the panel's turn footer says the same), or None when the record has none."""
    if not isinstance(window, dict):
        return None
    tokens = int(window.get("tokens") or 0)
    amount = f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)
    return (
        f"history: {plural(int(window.get('raw') or 0), 'turn')},"
        f" {window.get('l1') or 0} L1, {window.get('l2') or 0} L2,"
        f" {window.get('omitted') or 0} omitted, {amount} tokens"
    )


def _head(body: dict[str, Any], console: Console) -> None:
    console.print(f"[bold]run[/bold] {escape(str(body.get('run_id')))}", end="  ")
    console.print(f"chat {escape(str(body.get('chat_id')))}  {escape(str(body.get('program')))}")
    header: dict[str, Any] = body.get("header") or {}
    turn = body.get("turn")
    known: dict[str, Any] = turn if isinstance(turn, dict) else {}
    programs = header.get("programs") or known.get("programs")
    agent = header.get("agent") or known.get("fromAgent")
    if programs or agent:  # every program the run used, and who answered
        refs = ", ".join(str(p) for p in programs or ())
        console.print(f"agent {escape(str(agent or 'agent'))}  programs {escape(refs or '-')}")
    if body.get("program_error"):
        error = body["program_error"].get("error") or {}
        console.print(
            f"[red]the program failed[/red] after seq {body['program_error'].get('after_seq')}:"
            f" {escape(str(error.get('type')))}: {escape(str(error.get('message')))}"
        )
    if isinstance(turn, dict):
        llm = turn.get("llm") or {}
        console.print(
            f"model {escape(str(turn.get('model')))}  stop {llm.get('stopReason')}"
            f"  end {llm.get('endCause')}  calls {llm.get('modelCalls')}  cells {llm.get('cells')}"
            f"  tokens {_tokens(llm.get('usage'))}  cost {_cost(llm.get('cost'))}"
            f"  {turn.get('durationMs')} ms"
        )
        line = window_line(llm.get("window"))
        if line:
            console.print(escape(line))
    elif str(body.get("program") or "").startswith("history@"):
        _summary_head(body, console)
    else:
        console.print("(no turn record: the run did not finish)")
    if body.get("truncated"):
        console.print("[yellow]the log's last line was cut short[/yellow]")


def _summary_head(body: dict[str, Any], console: Console) -> None:
    """A summary run (``history@v1``) has no turn: its span, and the summary it stored."""
    span = (body.get("header") or {}).get("span") or {}
    console.print(
        f"summary of turns {span.get('first_turn')}-{span.get('last_turn')}"
        f" (level {span.get('level')})"
    )
    stores = [e for e in body.get("effects") or [] if e.get("name") == "chunk.store"]
    if not stores:
        console.print("(no summary stored: the run failed or was cut)")
        return
    intent, result = stores[-1].get("intent") or {}, stores[-1].get("result") or {}
    kept = "stored" if result.get("stored") else "already stored by an earlier run"
    console.print(f"model {escape(str(intent.get('model')))}  {kept}")
    console.print(_indent(escape(str(intent.get("text") or ""))))


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


#: How a step's status reads in ``trace show``.
_STATUS_WORDS = {"timed_out": "timed out"}


def _printed(outputs: Any) -> str:
    """The text a cell's nbformat outputs printed (streams and errors)."""
    parts = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "stream":
            parts.append(str(output.get("text") or ""))
        elif output.get("output_type") == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}\n")
    return "".join(parts)


def render_show(body: dict[str, Any]) -> None:
    """One run: its turn, then each step, then the effects table."""
    console = _console()
    _head(body, console)
    steps = body.get("steps") or []
    for at, step in enumerate(steps):
        kind, seq, status = step.get("type"), step.get("seq"), step.get("status", "ok")
        word = _STATUS_WORDS.get(str(status), str(status))
        flag = "" if status in ("ok", None) else f" [red]{escape(word)}[/red]"
        if kind in ("user", "steering", "bubble", "reply"):
            console.print(f"\n[bold]#{seq} {kind}[/bold]{flag}")
            console.print(escape(_indent(str(step.get("text") or ""))))
        elif kind == "cell":
            console.print(f"\n[bold]#{seq} cell {escape(str(step.get('cell_id')))}[/bold]{flag}")
            console.print(escape(_indent(str(step.get("code") or ""), "  > ")))
            if step.get("digest"):
                console.print(escape(_indent(str(step["digest"]))))
            elif printed := _printed(step.get("outputs") or ()):
                # A cut cell has no digest (the model read none): show what it printed.
                console.print(escape(_indent(printed)))
            for line in step.get("copies") or ():
                console.print(escape(_indent(str(line), "  ~ ")))
        elif kind == "bash":
            console.print(f"\n[bold]#{seq} bash {escape(str(step.get('cell_id')))}[/bold]{flag}")
            console.print(escape(_indent(str(step.get("command") or ""), "  $ ")))
            if step.get("digest"):
                console.print(escape(_indent(str(step["digest"]))))
            elif printed := "".join(str(step.get(k) or "") for k in ("stdout", "stderr")):
                console.print(escape(_indent(printed)))
        elif kind == "model_call":
            tries = step.get("attempts")
            detail = f"HTTP {step.get('http_status')}"
            if isinstance(tries, int):
                detail += f", {plural(tries, 'try')}"
            console.print(f"\n#{seq} model call{flag} ({detail})")
        elif kind == "recall":
            _recall(step, flag, console)
        elif kind == "break":
            console.print(f"\n#{seq} break ({'hard' if step.get('hard') else 'soft'})")
        elif kind == "approval":
            console.print(f"\n#{seq} {escape(approval_line(step, steps[at + 1 :], steps))}")
            if step.get("summary"):
                console.print(escape(_indent(str(step["summary"]))))
            # a cell's code is its step's; an MCP call's or the person's kernel's is its own
            if step.get("kind") in ("mcp", "kernel") and step.get("code"):
                console.print(escape(_indent(str(step["code"]), "  > ")))
        elif kind == "notice":
            console.print(
                f"\n#{seq} notice" + (f" · {escape(str(step['at']))}" if step.get("at") else "")
            )
            console.print(escape(_indent(str(step.get("text") or ""))))
    table = Table(title="effects", show_edge=False, header_style="bold")
    for name in ("seq", "name", "parent", "intent", "result"):
        table.add_column(name, overflow="fold")
    for effect in body.get("effects") or []:
        result = effect.get("error") if effect.get("error") is not None else effect.get("result")
        table.add_row(
            str(effect.get("seq")),
            escape(str(effect.get("name"))),
            str(effect.get("parent") or ""),
            escape(_brief(effect.get("intent"))),
            escape(_brief(result) if effect.get("t_result") else "(no result)"),
        )
    console.print()
    console.print(table)


def approval_line(
    step: dict[str, Any], later: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> str:
    """One line of an approval step: ``approval (cell c3): approved by the person``.

    The cell a wait let run is the next python cell or command of the steps after it
    (``later``); a denied one ran none: ``approval (cell): denied``. An MCP call's wait
    names the cell that made the call (the cell step whose ``seqs`` hold its ``parent``).
    """
    kind = str(step.get("kind") or "cell")
    label = kind
    if kind in ("cell", "bash") and step.get("approve") is True:
        ran = next((s for s in later if s.get("type") in ("cell", "bash")), None)
        if ran is not None and ran.get("type") == ("bash" if kind == "bash" else "cell"):
            label = f"{kind} {ran.get('cell_id')}"
    elif kind in ("mcp", "kernel") and step.get("parent") is not None:
        what = "mcp call" if kind == "mcp" else "code for the person's kernel"
        cell = next((s for s in steps if step["parent"] in (s.get("seqs") or ())), None)
        label = f"{what} in cell {cell.get('cell_id')}" if cell else what
    outcome = approval_outcome(
        approve=step.get("approve"),
        rest=step.get("rest"),
        by=step.get("by"),
        status=step.get("status"),
    )
    return f"approval ({label}): {outcome}"


def _recall(step: dict[str, Any], flag: str, console: Console) -> None:
    """Autorecall's step: synthetic (the model was shown it; nothing ran)."""
    seq, hits = step.get("seq"), step.get("hits") or []
    if not step.get("code"):
        console.print(
            f"\n#{seq} recall ({escape(str(step.get('program')))}){flag}: nothing recalled"
        )
        return
    console.print(
        f"\n[bold]#{seq} recall[/bold] [dim](synthetic: not run)[/dim]{flag}"
        f" {escape(str(step.get('program')))}: {plural(len(hits), 'hit')},"
        f" {step.get('tokens')} tokens"
    )
    console.print(escape(_indent(str(step.get("code") or ""), "  > ")))
    console.print(escape(_indent(str(step.get("text") or ""))))


def _brief(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_stats(body: dict[str, Any], stats: dict[str, Any]) -> None:
    """Per model call tokens and cost, then the run's (its turn's) totals."""
    console = _console()
    _head(body, console)
    table = Table(show_edge=False, header_style="bold")
    for name in ("seq", "tier", "model", "status", "tries"):
        table.add_column(name, overflow="fold")
    for name in ("in", "out", "cacheRead", "cacheWrite", "reasoning", "cost"):
        table.add_column(name, justify="right")
    calls = stats.get("calls") or []
    for call in calls:
        table.add_row(
            str(call.get("seq")) + (" (nested)" if call.get("nested") else ""),
            escape(str(call.get("tier") or "-")),
            escape(str(call.get("model") or "-")),
            escape(str(call.get("status"))),
            str(call.get("attempts") if call.get("attempts") is not None else "-"),
            *(str(call.get(k, 0)) for k in ("in", "out", "cacheRead", "cacheWrite", "reasoning")),
            _cost(call.get("cost")),
        )
    totals = stats.get("totals") or {}
    table.add_row(
        "[bold]turn[/bold]",
        "",
        "",
        f"{totals.get('failed', 0)} failed, {totals.get('cancelled', 0)} cancelled",
        str(totals.get("calls", len(calls))),
        *(str(totals.get(k, 0)) for k in ("in", "out", "cacheRead", "cacheWrite", "reasoning")),
        _cost(totals.get("cost")),
    )
    console.print(table)
