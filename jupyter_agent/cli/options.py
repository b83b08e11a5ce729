"""What every verb of ``jupyter agent`` shares: the server options, the client, the guard.

- :func:`add_server_options`: ``--addr URL`` and ``--token T`` on a verb that talks to a
  server.
- :func:`server_of` / :func:`connect`: the server those options name, else the running one
  found (:mod:`.discover`), and its :class:`~jupyter_agent.client.AgentClient`.
- :func:`guarded`: a handler whose expected failures (a :class:`ClientError`, any
  :class:`AgentError`, an ``OSError``) are one line on stderr and exit status 2, never a
  traceback.
- :func:`print_json`: the ``--json`` output.

The verb modules (:mod:`.trace`, :mod:`.memory`, :mod:`.program`) import this one;
:mod:`.main` imports the verbs; nothing here imports a verb.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from jupyter_agent.cli.discover import DEFAULT_ADDR, ORDER, pick_server
from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.exceptions import AgentError, CliFailure

__all__ = [
    "Handler",
    "Subparsers",
    "add_server_options",
    "client_failure",
    "connect",
    "guarded",
    "print_json",
    "server_of",
]

Subparsers = Any  # argparse's _SubParsersAction is private
Handler = Callable[[argparse.Namespace], int]


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """``--addr URL`` and ``--token T``; without ``--addr`` the running servers are found
    (:mod:`jupyter_agent.cli.discover`; the order is in the help)."""
    group = parser.add_argument_group("server", ORDER)
    group.add_argument(
        "--addr", default=None, help=f"the server's URL (default: found, else {DEFAULT_ADDR})"
    )
    group.add_argument(
        "--token",
        default=None,
        help="the server's token (default: the found server's, else JUPYTER_TOKEN)",
    )


def server_of(args: argparse.Namespace) -> tuple[str, str | None]:
    """``(addr, token)`` of the server the verb talks to, found once per command (see
    :mod:`jupyter_agent.cli.discover`); a found server is named on stderr."""
    resolved: tuple[str, str | None] | None = getattr(args, "_server", None)
    if resolved is not None:
        return resolved
    env_token = os.environ.get("JUPYTER_TOKEN") or None
    if args.addr is not None:
        resolved = (args.addr, args.token or env_token)
    else:
        addr, token, found = pick_server(token_flag=args.token, env_token=env_token)
        if found is not None:
            args._root_dir = found.root_dir or None
            root = f" (root {found.root_dir})" if found.root_dir else ""
            print(f"jupyter agent: using the server at {addr}{root}", file=sys.stderr)
        resolved = (addr, token)
    args._server = resolved
    args.addr = resolved[0]
    return resolved


def connect(args: argparse.Namespace) -> AgentClient:
    """The client of the server the verb talks to (:func:`server_of`)."""
    addr, token = server_of(args)
    return AgentClient(addr, token)


def client_failure(exc: ClientError) -> str:
    """The one line a client failure prints (a missing token says how to give one)."""
    if exc.reason == "no_token" and not isinstance(exc, CliFailure):  # a CliFailure is worded
        return f"no token: pass --token or set JUPYTER_TOKEN (the server at {exc.addr} needs one)"
    return str(exc)


def guarded(handler: Handler) -> Handler:
    """Run ``handler``; expected failures become one line on stderr and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ClientError as exc:
            print(f"jupyter agent: {client_failure(exc)}", file=sys.stderr)
            return 2
        except AgentError as exc:  # CliFailure among them
            print(f"jupyter agent: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:  # a file that cannot be read or written
            where = f": {exc.filename}" if exc.filename else ""
            print(f"jupyter agent: {exc.strerror or exc}{where}", file=sys.stderr)
            return 2

    return run


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (non-ASCII kept)."""
    print(json.dumps(value, indent=2, ensure_ascii=False))
