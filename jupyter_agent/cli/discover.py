"""Which server a verb talks to: the flags, else the running servers Jupyter lists.

The order (also in every server verb's ``--help``):

1. ``--addr URL`` names the server; its token is ``--token``, else ``JUPYTER_TOKEN``.
2. Without ``--addr``, the servers ``jupyter server list`` shows: the ``jpserver-PID.json``
   files of the Jupyter runtime dir (``jupyter --runtime-dir``; ``JUPYTER_RUNTIME_DIR``) whose
   process is alive. Each is asked ``GET agent/status`` with its own token (``--token``
   wins, then the file's, then ``JUPYTER_TOKEN``); those that answer serve the agent:

   - one: it is used, and one line on stderr says which (URL and root dir);
   - several: on a terminal the person picks one; otherwise a :class:`CliFailure` lists
     them (``--addr`` picks one);
   - none: ``http://127.0.0.1:8888/`` (the default of Jupyter), as before discovery.

Reading a server file needs no import of jupyter_server (only ``server/`` imports it):
the file is JSON with ``url``, ``token``, ``root_dir``, ``pid``, written by every Jupyter
server at start and removed at its end.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.exceptions import CliFailure

__all__ = ["DEFAULT_ADDR", "ORDER", "Found", "pick_server", "running_servers"]

#: What a verb talks to when no flag names a server and none is found.
DEFAULT_ADDR = "http://127.0.0.1:8888/"
#: The order, as each server verb's ``--help`` states it.
ORDER = (
    "Which server: --addr (with --token, else JUPYTER_TOKEN); else the running Jupyter "
    "servers (as `jupyter server list` finds them) that serve the agent, each with its own "
    "token; else " + DEFAULT_ADDR
)


@dataclass(frozen=True)
class Found:
    """One running Jupyter server, as its server file describes it."""

    url: str
    token: str | None
    root_dir: str
    pid: int


def _runtime_dir() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def running_servers(runtime_dir: Path | None = None) -> Iterator[Found]:
    """The live servers of ``runtime_dir`` (default: Jupyter's), newest file first; a file
    being written or of a dead process is skipped."""
    folder = runtime_dir if runtime_dir is not None else _runtime_dir()
    try:
        files = sorted(folder.glob("jpserver-*.json"), key=_mtime, reverse=True)
    except OSError:
        return
    for path in files:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            pid = int(info["pid"])
            url = str(info["url"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            continue
        token = info.get("token") or None
        root = str(info.get("root_dir") or info.get("notebook_dir") or "")
        yield Found(url=url, token=str(token) if token else None, root_dir=root, pid=pid)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _serves_agent(found: Found, token: str | None) -> bool:
    try:
        with AgentClient(found.url, token, timeout=3) as client:
            client.status()
    except ClientError:
        return False
    return True


def pick_server(
    *,
    token_flag: str | None,
    env_token: str | None,
    runtime_dir: Path | None = None,
    choose: Callable[[list[Found]], Found] | None = None,
) -> tuple[str, str | None, Found | None]:
    """``(addr, token, the server found or None)`` when no ``--addr`` was given (see the
    module docstring). ``choose`` picks among several (default: a prompt on a terminal,
    else a :class:`CliFailure` listing them)."""
    serving: list[tuple[Found, str | None]] = []
    for found in running_servers(runtime_dir):
        token = token_flag or found.token or env_token
        if _serves_agent(found, token):
            serving.append((found, token))
    if not serving:
        return DEFAULT_ADDR, token_flag or env_token, None
    if len(serving) == 1:
        found, token = serving[0]
        return found.url, token, found
    picker = choose or _ask
    chosen = picker([found for found, _ in serving])
    token = next(t for f, t in serving if f == chosen)
    return chosen.url, token, chosen


def _ask(servers: list[Found]) -> Found:
    listed = "\n".join(
        f"  {i}. {s.url} (root {s.root_dir or '?'}, pid {s.pid})" for i, s in enumerate(servers, 1)
    )
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise CliFailure(
            f"{len(servers)} running servers serve the agent; pick one with --addr:\n{listed}",
            reason="ambiguous_server",
        )
    print(f"{len(servers)} running servers serve the agent:\n{listed}", file=sys.stderr)
    while True:
        print(f"which one [1-{len(servers)}]? ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline()
        if not answer:
            raise CliFailure("no server picked", reason="ambiguous_server")
        if answer.strip().isdigit() and 1 <= int(answer) <= len(servers):
            return servers[int(answer) - 1]
