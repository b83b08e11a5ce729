"""``jupyter agent import NOTEBOOK [--title T] [--json]``: a chat made from an export.

Reads an exported chat notebook (*Export chat as notebook*, ``GET
agent/chats/{id}/notebook``, or a turn's ``jupyter agent export``) and makes a chat of it on
the server (``POST agent/chats/import``): its turns are the notebook's, so someone else
goes on with the conversation. Prints the new chat's id (``--json``: the chat). Exit
status 2 with one line on stderr for every expected failure (no such file, not JSON, a
notebook that is no exported chat, an unreachable server).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jupyter_agent.cli.options import Subparsers, add_server_options, connect, guarded, print_json
from jupyter_agent.exceptions import CliFailure

__all__ = ["add_import"]


@guarded
def _import(args: argparse.Namespace) -> int:
    path = Path(args.notebook)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliFailure(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CliFailure(f"{path} is not a notebook (not JSON: {exc})") from None
    if not isinstance(notebook, dict):
        raise CliFailure(f"{path} is not a notebook (not a JSON object)")
    with connect(args) as client:
        chat = client.import_chat(notebook, title=args.title)
    if args.json:
        print_json(chat)
    else:
        print(chat["id"])
    return 0


def add_import(subparsers: Subparsers) -> None:
    """``import NOTEBOOK [--title T] [--json]``."""
    verb = subparsers.add_parser(
        "import", help="make a chat from an exported chat notebook (its turns as history)"
    )
    add_server_options(verb)
    verb.add_argument("notebook", metavar="NOTEBOOK", help="the exported chat notebook (.ipynb)")
    verb.add_argument(
        "--title", default=None, help="the new chat's title (default: Imported: <its title>)"
    )
    verb.add_argument("--json", action="store_true", help="print the new chat's JSON")
    verb.set_defaults(handler=_import)
