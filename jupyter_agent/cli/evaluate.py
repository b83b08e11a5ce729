"""``jupyter agent eval [SUITE] [--run RUN ...] [--model NAME ...] [--program P] [-n N]``.

Runs an eval (``POST agent/evals``; :mod:`jupyter_agent.runtime.evals.service`): the
cases of the suite (a notebook, or a folder of them, under the server's root) and the
recorded runs given, once per model and repeat, then waits for its end, printing each
case as it ends (stderr) and the tally per model, the failures and the report's path
(stdout). ``--json`` prints the eval's whole final state instead. A local ``SUITE`` path
is made relative to the found server's root (with ``--addr``, give it relative to the
server's root). Exit status: 0 when every case passed, 1 when one failed or erred, 2 with
one line on stderr for every expected failure (an unreachable server, a refused suite,
model or program).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from jupyter_agent.cli.options import Subparsers, add_server_options, connect, guarded, print_json
from jupyter_agent.exceptions import CliFailure

__all__ = ["add_eval"]

_WAIT_S = 3600.0


def _suite_path(raw: str, root: str | None) -> str:
    """``raw`` as a path under the server's root ``root`` (as given when unknown)."""
    if root is None or not os.path.exists(raw):
        return raw
    rel = os.path.relpath(os.path.realpath(raw), os.path.realpath(root))
    if rel == ".." or rel.startswith(".." + os.sep):
        raise CliFailure(f"the suite {raw} is outside the server's root ({root})")
    return "" if rel == "." else rel.replace(os.sep, "/")


def _models(args: argparse.Namespace) -> list[str]:
    models = list(args.model or [])
    for tier in args.tier or []:
        name, _, model = tier.partition("=")
        if name != "codegen" or not model:
            raise CliFailure(f"--tier takes codegen=MODEL (the model the cases run on), not {tier}")
        models.append(model)
    return models


def _line(result: dict[str, Any]) -> str:
    model = result.get("model") or "agent"
    why = f": {result['message']}" if result.get("message") else ""
    return f"{result['status']:>7}  {result['case']} [{model} #{result['repeat']}]{why}"


@guarded
def _eval(args: argparse.Namespace) -> int:
    if args.suite is None and not args.run:
        raise CliFailure("give a SUITE (a notebook or a folder of them) or --run RUN")
    with connect(args) as client:
        body: dict[str, Any] = {"repeats": args.repeats, "concurrency": args.concurrency}
        if args.suite is not None:
            body["suite"] = _suite_path(args.suite, getattr(args, "_root_dir", None))
        if args.run:
            body["runs"] = list(args.run)
        models = _models(args)
        if models:
            body["models"] = models
        if args.program:
            body["program"] = args.program
        state = client.start_eval(body)
        print(f"eval {state['eval_id']}: {state['total']} case runs", file=sys.stderr)
        shown: set[int] = set()
        deadline = time.monotonic() + _WAIT_S
        while True:
            for index, result in enumerate(state["results"]):
                if index not in shown and result["status"] in ("passed", "failed", "error"):
                    shown.add(index)
                    print(_line(result), file=sys.stderr)
            if state["status"] == "done":
                break
            if time.monotonic() > deadline:
                raise CliFailure(f"eval {state['eval_id']} still going after {_WAIT_S:g} s")
            time.sleep(0.5)
            state = client.eval_state(state["eval_id"])
    if args.json:
        print_json(state)
    else:
        for model, row in state["by_model"].items():
            print(
                f"{model}: {row['passed']}/{row['total']} passed ({row['pass_rate']:.0%}), "
                f"{row['tokens']:,} tokens, ${row['cost_usd']:.4f}"
            )
        for result in state["results"]:
            if result["status"] != "passed":
                print(_line(result))
        if state.get("error"):
            print(f"the eval stopped early: {state['error']}")
        print(f"report: {state['report']}")
    return 0 if state["passed"] == state["total"] and not state.get("error") else 1


def add_eval(subparsers: Subparsers) -> None:
    """``eval [SUITE] [--run RUN ...] [--model NAME ...] [--program P] [-n N] [--json]``."""
    parser = subparsers.add_parser(
        "eval", help="run a suite of cases (and re-run recorded runs), checked and reported"
    )
    add_server_options(parser)
    parser.add_argument(
        "suite", metavar="SUITE", nargs="?", help="a suite notebook or a folder of them"
    )
    parser.add_argument(
        "--run", action="append", metavar="RUN", help="a recorded run to re-run (repeatable)"
    )
    parser.add_argument(
        "--model",
        action="append",
        metavar="NAME",
        help="a tier name or a model of codegen's provider; repeat it to compare models",
    )
    parser.add_argument(
        "--tier", action="append", metavar="codegen=MODEL", help="the same as --model MODEL"
    )
    parser.add_argument("--program", default=None, help="toolcaller@vN (default: the agent's)")
    parser.add_argument(
        "-n", "--repeats", type=int, default=1, help="runs of each case per model (1..20)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="cases at once (1..16; default 4)"
    )
    parser.add_argument("--json", action="store_true", help="print the final JSON state")
    parser.set_defaults(handler=_eval)
