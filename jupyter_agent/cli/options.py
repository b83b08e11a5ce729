"""What every verb of ``jupyter agent`` shares: the server options, the client, the guard.

- :func:`add_server_options`: ``--addr URL`` and ``--token T`` on a verb that talks to a
  server (``main`` fills a missing token from ``JUPYTER_TOKEN``).
- :func:`connect`: the :class:`~jupyter_agent.client.AgentClient` those options name.
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
import sys
from collections.abc import Callable
from typing import Any

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
]

Subparsers = Any  # argparse's _SubParsersAction is private
Handler = Callable[[argparse.Namespace], int]


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """``--addr URL`` and ``--token T`` (default: the JUPYTER_TOKEN environment variable)."""
    parser.add_argument("--addr", default="http://127.0.0.1:8888/", help="the server's URL")
    parser.add_argument(
        "--token",
        default=None,
        help="the server's token (default: the JUPYTER_TOKEN environment variable)",
    )


def connect(args: argparse.Namespace) -> AgentClient:
    """The client of the server ``--addr`` / ``--token`` name."""
    return AgentClient(args.addr, args.token)


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
