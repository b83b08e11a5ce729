"""The program verbs of ``jupyter agent``: deploy, list, show and roll back.

Registered in :data:`jupyter_agent.cli.main.VERBS` by :func:`add_program`; every verb talks to
a server (``--addr``, ``--token``) through ``agent/programs``:

- ``program deploy NAME PATH [--agent A] [--no-activate]``: deploy the ``.py`` file or the
  folder at PATH as a new version of NAME (a folder's files the rules do not keep are
  skipped); the server checks it (syntax, entry point, smoke test) and refuses with the
  file and line.
- ``program ls [--json]``: every family, its versions and which one each layer runs.
- ``program show NAME[@vN] [--files] [--json]``: one version (default: the active one).
- ``program rollback NAME [--agent A] [--to N]``: the previous version, or version N.

Exit status 2 with one line on stderr for every expected failure (an unreachable server,
a refused token or deploy, an unknown version).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from jupyter_agent.cli.options import Subparsers, add_server_options, connect, guarded, print_json
from jupyter_agent.cli.render import _console
from jupyter_agent.exceptions import CliFailure, ProgramRefused
from jupyter_agent.programs.files import read_source

__all__ = ["add_program", "render_programs"]


def render_programs(listed: dict[str, Any]) -> None:
    """A table of every version (REST ``GET agent/programs`` JSON), the active ones marked."""
    table = Table(show_edge=False, header_style="bold")
    for column in ("program", "kind", "by", "created", "active for", "description"):
        table.add_column(column, overflow="fold")
    for family in listed.get("programs") or []:
        active = family.get("active") or {}
        for version in family.get("versions") or []:
            layers = [a for a, ref in active.items() if ref == version.get("ref")]
            table.add_row(
                escape(str(version.get("ref"))),
                "built in" if version.get("builtin") else str(family.get("kind")),
                escape(str(version.get("by") or "")),
                escape(str(version.get("created") or "")),
                escape(", ".join("every agent" if a == "*" else a for a in layers)),
                escape(str(version.get("description") or "")),
            )
    _console().print(table)


@guarded
def _deploy(args: argparse.Namespace) -> int:
    try:
        files = read_source(Path(args.path))
    except ProgramRefused as exc:
        raise CliFailure(str(exc)) from None
    with connect(args) as client:
        answer = client.deploy(args.name, files, agent=args.agent, activate=not args.no_activate)
    if args.json:
        print_json(answer)
        return 0
    program = answer.get("program") or {}
    where = f" for agent {args.agent}" if args.agent else ""
    print(f"Deployed {program.get('ref')} ({len(files)} files)")
    print(f"Active{where}: {answer.get('active')}")
    return 0


@guarded
def _ls(args: argparse.Namespace) -> int:
    with connect(args) as client:
        listed = client.programs()
    if args.json:
        print_json(listed)
    else:
        render_programs(listed)
    return 0


@guarded
def _show(args: argparse.Namespace) -> int:
    with connect(args) as client:
        version = client.program(args.name)
    if args.json:
        print_json(version)
        return 0
    print(f"{version.get('ref')}{' (built in)' if version.get('builtin') else ''}")
    for label, key in (("by", "by"), ("created", "created"), ("description", "description")):
        if version.get(key):
            print(f"  {label}: {version.get(key)}")
    print(f"  uses: {', '.join(version.get('uses') or []) or '-'}")
    if version.get("builtin"):
        print(f"  modules: {', '.join(version.get('modules') or [])}")
    files = version.get("files") or {}
    if files and not args.files:
        print(f"  files: {', '.join(sorted(files))}")
    for path in sorted(files) if args.files else ():
        print(f"\n--- {path}")
        print(files[path], end="" if files[path].endswith("\n") else "\n")
    return 0


@guarded
def _rollback(args: argparse.Namespace) -> int:
    with connect(args) as client:
        answer = client.rollback(args.name, agent=args.agent, to=args.to)
    where = f" for agent {args.agent}" if args.agent else ""
    print(f"Active{where}: {answer.get('active')}")
    return 0


def add_program(subparsers: Subparsers) -> None:
    """``program deploy|ls|show|rollback``."""
    program = subparsers.add_parser("program", help="the program versions runs use")
    verbs = program.add_subparsers(
        dest="program_verb", required=True, metavar="{deploy,ls,show,rollback}"
    )

    deploy = verbs.add_parser("deploy", help="deploy a new version from a .py file or folder")
    add_server_options(deploy)
    deploy.add_argument("name", metavar="NAME", help="the family: toolcaller or history")
    deploy.add_argument("path", metavar="PATH", help="a .py file or a folder")
    deploy.add_argument("--agent", default=None, help="for this agent only")
    deploy.add_argument(
        "--no-activate", action="store_true", help="store it without making it active"
    )
    deploy.add_argument("--json", action="store_true", help="print the JSON answer")
    deploy.set_defaults(handler=_deploy)

    ls = verbs.add_parser("ls", help="every version and which one each layer runs")
    add_server_options(ls)
    ls.add_argument("--json", action="store_true", help="print the JSON answer")
    ls.set_defaults(handler=_ls)

    show = verbs.add_parser("show", help="one version (default: the active one)")
    add_server_options(show)
    show.add_argument("name", metavar="NAME[@vN]")
    show.add_argument("--files", action="store_true", help="print every file")
    show.add_argument("--json", action="store_true", help="print the JSON answer")
    show.set_defaults(handler=_show)

    rollback = verbs.add_parser("rollback", help="back to the previous version, or to --to N")
    add_server_options(rollback)
    rollback.add_argument("name", metavar="NAME")
    rollback.add_argument("--agent", default=None, help="this agent's layer")
    rollback.add_argument("--to", type=int, default=None, metavar="N", help="version N")
    rollback.set_defaults(handler=_rollback)
