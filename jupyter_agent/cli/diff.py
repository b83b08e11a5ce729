"""``jupyter agent trace diff A B [--json]``: where two runs first part, and the rest.

Each of A and B is a run id (its log fetched from the server, ``GET agent/runs/{id}?log=raw``;
with no server answering, the local runs folder's) or a local ``.jsonl`` log. The diff is
computed here from the two logs (:func:`jupyter_agent.trace.compare.diff.diff_runs`, the body of
``GET agent/runs/{a}/diff/{b}``): the first divergence (index, seqs, effects, the part that
differs, and its unified diffs: system, conversation, reply, code, output or data), then
both runs' totals side by side. ``--json`` prints the body.

Exit status: 0 when the runs are identical, 1 when they differ, 2 with one line on stderr
for every expected failure (an unknown run, an unreachable server, a log that does not read).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jupyter_agent.cli.options import add_server_options, guarded, print_json
from jupyter_agent.cli.trace import _check_run_id, _local_log, _run_from_server
from jupyter_agent.exceptions import CliFailure
from jupyter_agent.trace.compare.diff import diff_runs
from jupyter_agent.trace.reader import TraceFile, parse_log, read_log

__all__ = ["add_diff", "render_diff"]

_ROWS = (
    ("effects", "effects"),
    ("model calls", "model_calls"),
    ("cells", "cells"),
    ("tokens in", "tokens_in"),
    ("tokens out", "tokens_out"),
    ("cost (USD)", "cost"),
    ("stop reason", "stop_reason"),
    ("end cause", "end_cause"),
    ("seconds", "seconds"),
)
_DIFFS = ("system_diff", "conversation_diff", "reply_diff", "code_diff", "output_diff", "data_diff")


def _trace(args: argparse.Namespace, run: str) -> TraceFile:
    local = _local_log(run) if not run.startswith("run_") else None
    if local is not None:
        return read_log(local)
    run_id = _check_run_id(run)
    try:
        raw = _run_from_server(args, run_id, lambda c: c.run_log(run_id), local=True)
    except CliFailure as exc:
        found = _local_log(run_id) if exc.reason in ("unreachable", "timeout") else None
        if found is None:
            raise
        print(f"jupyter agent: no server answered; the local log {found}", file=sys.stderr)
        return read_log(found)
    return parse_log(raw.encode())


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if value < 10 else f"{value:.1f}"
    return str(value)


def render_diff(body: dict[str, Any]) -> None:
    """The diff as text: the two runs, the first divergence with its diffs, the totals."""
    a, b = body.get("a") or {}, body.get("b") or {}
    for side, label in ((a, "a"), (b, "b")):
        rerun = f", a rerun of {side['rerun_of']}" if side.get("rerun_of") else ""
        print(f"{label}: {side.get('run_id')} ({side.get('program')}, {side.get('model')}{rerun})")
    divergence = body.get("divergence")
    if divergence is None:
        print("\nidentical: the same effects, asked and answered alike")
    else:
        print(
            f"\nfirst divergence: effect {divergence['index'] + 1} "
            f"(seq {divergence.get('seq_a')} {divergence.get('effect_a')} / "
            f"seq {divergence.get('seq_b')} {divergence.get('effect_b')}), "
            f"its {divergence.get('part')}: {divergence.get('what')}"
        )
        model = divergence.get("model")
        if isinstance(model, dict) and model.get("a") != model.get("b"):
            print(f"model: {model.get('a')} -> {model.get('b')}")
        for key in _DIFFS:
            text = divergence.get(key)
            if text:
                print(f"\n{key.removesuffix('_diff')}:\n{text}")
    totals = body.get("summary") or {}
    ta, tb = totals.get("a") or {}, totals.get("b") or {}
    print(f"\n{'':>12}  {'a':<24}  b")
    for label, key in _ROWS:
        mark = "" if ta.get(key) == tb.get(key) else "  *"
        print(f"{label:>12}  {_cell(ta.get(key)):<24}  {_cell(tb.get(key))}{mark}")


@guarded
def _trace_diff(args: argparse.Namespace) -> int:
    body = diff_runs(_trace(args, args.a), _trace(args, args.b))
    if args.json:
        print_json(body)
    else:
        render_diff(body)
    return 0 if body["identical"] else 1


def add_diff(verbs: Any) -> None:
    """``trace diff A B [--json]`` (a verb of ``trace``)."""
    diff = verbs.add_parser("diff", help="where two runs first part, and their totals")
    add_server_options(diff)
    diff.add_argument("a", metavar="A", help="a run id, or a local .jsonl log")
    diff.add_argument("b", metavar="B", help="a run id, or a local .jsonl log")
    diff.add_argument("--json", action="store_true", help="print the JSON answer")
    diff.set_defaults(handler=_trace_diff)
