"""The memory verbs of ``jupyter agent``: the person's facts on a server.

Registered in :data:`jupyter_agent.cli.main.VERBS` by :func:`add_memory`; every verb talks to a
server (``--addr``, ``--token``) through ``agent/memories``:

- ``memory ls [--category C] [--json]``: the facts, newest first (a table: id, category,
  text, author, updated) and the categories with their counts.
- ``memory search QUERY [-k N] [--category C] [--json]``: the facts that best match, with
  their scores.
- ``memory add TEXT [--category C] [--json]``: add a fact (the person's); a text that
  holds a secret is refused by the server (exit 2, its reason).
- ``memory edit ID [--text T] [--category C] [--json]``: change a fact.
- ``memory rm ID``: delete a fact.
- ``memory export [-o FILE]``: every fact as JSON ``{memories: [...]}``, to FILE or stdout.

Exit status 2 with one line on stderr for every expected failure (an unreachable server,
a refused token, an unknown id, a refused text), as the trace verbs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from jupyter_agent.cli.options import Subparsers, add_server_options, connect, guarded, print_json
from jupyter_agent.cli.render import _console, plural
from jupyter_agent.exceptions import CliFailure
from jupyter_agent.runtime.memory.service import MAX_LIST

__all__ = ["add_memory", "render_memories"]


def render_memories(memories: list[dict[str, Any]], *, scores: bool = False) -> None:
    """A table of facts (REST Memory JSON; ``scores``: with the search score)."""
    console = _console()
    if not memories:
        console.print("No memories.")
        return
    table = Table(show_edge=False, header_style="bold")
    if scores:
        table.add_column("score", justify="right")
    table.add_column("id", no_wrap=True)
    table.add_column("category")
    table.add_column("text", overflow="fold", ratio=1)
    table.add_column("author")
    table.add_column("updated", no_wrap=True)
    for m in memories:
        row = [
            escape(str(m.get("id"))),
            escape(str(m.get("category"))),
            escape(str(m.get("text"))),
            escape(str(m.get("author"))),
            escape(str(m.get("updated") or "")),
        ]
        if scores:
            row.insert(0, f"{float(m.get('score') or 0):.2f}")
        table.add_row(*row)
    console.print(table)


def _categories_line(categories: list[dict[str, Any]]) -> str:
    return ", ".join(f"{c.get('category')} ({c.get('count')})" for c in categories)


@guarded
def _ls(args: argparse.Namespace) -> int:
    with connect(args) as client:
        page = client.memories(category=args.category)
    if args.json:
        print_json(page)
        return 0
    memories = page.get("memories") or []
    render_memories(memories)
    categories = page.get("categories") or []
    if categories:
        _console().print(f"Categories: {escape(_categories_line(categories))}")
    return 0


@guarded
def _search(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise CliFailure("memory search needs a query (use memory ls to list every fact)")
    with connect(args) as client:
        page = client.memories(q=args.query, category=args.category, limit=args.k)
    if args.json:
        print_json(page)
    else:
        render_memories(page.get("memories") or [], scores=True)
    return 0


def _saved(memory: dict[str, Any], verb: str, as_json: bool) -> None:
    if as_json:
        print_json(memory)
    else:
        print(f"{verb} {memory.get('id')} ({memory.get('category')}): {memory.get('text')}")


@guarded
def _add(args: argparse.Namespace) -> int:
    with connect(args) as client:
        memory = client.add_memory(args.text, category=args.category)
    _saved(memory, "Saved", args.json)
    return 0


@guarded
def _edit(args: argparse.Namespace) -> int:
    if args.text is None and args.category is None:
        raise CliFailure("memory edit needs --text or --category")
    with connect(args) as client:
        memory = client.update_memory(args.id, text=args.text, category=args.category)
    _saved(memory, "Changed", args.json)
    return 0


@guarded
def _rm(args: argparse.Namespace) -> int:
    with connect(args) as client:
        client.delete_memory(args.id)
    print(f"Deleted {args.id}")
    return 0


@guarded
def _export(args: argparse.Namespace) -> int:
    with connect(args) as client:
        memories = client.list_memories(limit=MAX_LIST)
    if len(memories) >= MAX_LIST:
        print(
            f"jupyter agent: warning: the export holds the newest {MAX_LIST} facts only",
            file=sys.stderr,
        )
    text = json.dumps({"memories": memories}, indent=2, ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"Wrote {args.output} ({plural(len(memories), 'memory', 'memories')})")
    return 0


def add_memory(subparsers: Subparsers) -> None:
    """``memory ls|search|add|edit|rm|export``."""
    memory = subparsers.add_parser("memory", help="the facts the agent keeps between chats")
    verbs = memory.add_subparsers(
        dest="memory_verb", required=True, metavar="{ls,search,add,edit,rm,export}"
    )

    ls = verbs.add_parser("ls", help="the facts, newest first")
    add_server_options(ls)
    ls.add_argument("--category", default=None, help="only this category")
    ls.add_argument("--json", action="store_true", help="print the JSON answer")
    ls.set_defaults(handler=_ls)

    search = verbs.add_parser("search", help="the facts that best match a query")
    add_server_options(search)
    search.add_argument("query", metavar="QUERY")
    search.add_argument("-k", type=int, default=5, help="at most K facts (default 5)")
    search.add_argument("--category", default=None, help="only this category")
    search.add_argument("--json", action="store_true", help="print the JSON answer")
    search.set_defaults(handler=_search)

    add = verbs.add_parser("add", help="add a fact")
    add_server_options(add)
    add.add_argument("text", metavar="TEXT")
    add.add_argument("--category", default=None, help="its category (default: general)")
    add.add_argument("--json", action="store_true", help="print the new fact as JSON")
    add.set_defaults(handler=_add)

    edit = verbs.add_parser("edit", help="change a fact's text or category")
    add_server_options(edit)
    edit.add_argument("id", metavar="ID")
    edit.add_argument("--text", default=None, help="the new text")
    edit.add_argument("--category", default=None, help="the new category")
    edit.add_argument("--json", action="store_true", help="print the fact as JSON")
    edit.set_defaults(handler=_edit)

    rm = verbs.add_parser("rm", help="delete a fact")
    add_server_options(rm)
    rm.add_argument("id", metavar="ID")
    rm.set_defaults(handler=_rm)

    export = verbs.add_parser("export", help="every fact as JSON {memories: [...]}")
    add_server_options(export)
    export.add_argument("-o", "--output", default=None, metavar="FILE", help="default: stdout")
    export.set_defaults(handler=_export)
