"""The check process's entry: ``python -m jupyter_agent.programs.check_worker``.

It runs the checks of one deploy that execute the program's code (importing it, the smoke
test, its own scenarios: :func:`~jupyter_agent.programs.deploy_checks.check_deploy`) in a
process of its own, started by :mod:`~jupyter_agent.programs.check_process`.

Protocol: stdin holds one JSON object ``{"name": family, "files": {path: text}}``; stdout
gets one line, the verdict: ``{"ok": true, "hash": full hash}`` or ``{"ok": false,
"message": the refusal}``. Before any program code runs, fd 1 is moved aside and pointed
at stderr, so what the program prints never mixes with the verdict. The working dir is the
scratch dir (the throwaway copy goes there). It ends with ``os._exit``: a thread a stuck
program left behind cannot keep it alive, and no program ``atexit`` hook runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _verdict(request: Any) -> dict[str, Any]:
    from jupyter_agent.exceptions import ProgramRefused
    from jupyter_agent.programs.deploy_checks import check_deploy

    if not isinstance(request, dict):
        return {"ok": False, "message": "the check process got no deploy to check"}
    try:
        name = str(request.get("name"))
        checked = check_deploy(name, request.get("files"), scratch=Path.cwd())
    except ProgramRefused as exc:
        return {"ok": False, "message": str(exc)}
    except BaseException as exc:  # a program may raise anything, SystemExit too
        return {"ok": False, "message": f"the checks failed: {type(exc).__name__}: {exc}"[:600]}
    return {"ok": True, "hash": checked.hash}


def main() -> None:
    """Read the deploy, check it, write the verdict, end (see the module docstring)."""
    verdict_fd = os.dup(1)  # not inheritable: a program's subprocess does not get it
    os.dup2(2, 1)
    try:
        request = json.loads(sys.stdin.read())
    except ValueError:
        request = None
    verdict = _verdict(request)
    for stream in (sys.stdout, sys.stderr):  # os._exit flushes nothing
        with contextlib.suppress(Exception):
            stream.flush()
    line = (json.dumps(verdict) + "\n").encode()
    while line:
        line = line[os.write(verdict_fd, line) :]
    os._exit(0)


if __name__ == "__main__":
    main()
