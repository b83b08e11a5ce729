"""``jupyter agent rerun RUN [--model NAME] [--program toolcaller@vN] [--wait] [--json]``.

Re-runs a recorded run with its recorded inputs (the message, its view, the history
window, recall, memory) live against another model or program, as a run of its own that
is no turn of the chat (``POST agent/runs/{id}/rerun``; see
:mod:`jupyter_agent.runtime.loop.rerun`). It prints the new run's id; with ``--wait`` it
waits for the rerun's end and prints its summary beside the original's (status, model,
calls, cells, tokens, cost, reply). Exit status 2 with one line on stderr for every
expected failure (an unreachable server, a refused model or program, an unknown run).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from jupyter_agent.cli.options import Subparsers, add_server_options, connect, guarded, print_json
from jupyter_agent.exceptions import CliFailure

__all__ = ["add_rerun"]

_WAIT_S = 600.0


def _row(run: dict[str, Any]) -> list[str]:
    summary = run.get("summary") or {}
    usage = summary.get("usage") or {}
    replies = ((run.get("turn") or {}).get("replies")) or []
    reply = str(replies[-1].get("text") or "") if replies else ""
    cost = summary.get("cost")
    return [
        str(summary.get("run_id")),
        str(summary.get("status")),
        str(summary.get("model") or "-"),
        str(summary.get("program")),
        f"{summary.get('modelCalls', 0)} calls, {summary.get('cells', 0)} cells",
        f"{usage.get('in', 0)} in / {usage.get('out', 0)} out",
        "unknown" if cost is None else f"${cost:.4f}",
        reply if len(reply) <= 80 else reply[:79] + "…",
    ]


@guarded
def _rerun(args: argparse.Namespace) -> int:
    with connect(args) as client:
        answer = client.rerun(args.run, model=args.model, program=args.program)
        if not args.wait:
            if args.json:
                print_json(answer)
            else:
                print(answer["run_id"])
            return 0
        deadline = time.monotonic() + _WAIT_S
        while True:
            run = client.run(answer["run_id"])
            if (run.get("summary") or {}).get("status") != "running":
                break
            if time.monotonic() > deadline:
                raise CliFailure(f"rerun {answer['run_id']} still going after {_WAIT_S:g} s")
            time.sleep(0.3)
        original = client.run(args.run)
    if args.json:
        print_json({**answer, "rerun": run.get("summary"), "original": original.get("summary")})
        return 0
    labels = ("run", "status", "model", "program", "work", "tokens", "cost", "reply")
    for label, was, now in zip(labels, _row(original), _row(run), strict=True):
        print(f"{label:>8}  {was:<40}  {now}")
    return 0


def add_rerun(subparsers: Subparsers) -> None:
    """``rerun RUN [--model NAME] [--program toolcaller@vN] [--wait] [--json]``."""
    rerun = subparsers.add_parser(
        "rerun", help="re-run a run with its recorded inputs on another model or program"
    )
    add_server_options(rerun)
    rerun.add_argument("run", metavar="RUN", help="the run to re-run (its id)")
    rerun.add_argument(
        "--model", default=None, help="a tier name (classify) or a model of codegen's provider"
    )
    rerun.add_argument("--program", default=None, help="toolcaller@vN (default: the run's)")
    rerun.add_argument(
        "--wait", action="store_true", help="wait for its end; print it beside the original"
    )
    rerun.add_argument("--json", action="store_true", help="print the JSON answer")
    rerun.set_defaults(handler=_rerun)
