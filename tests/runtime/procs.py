"""Helpers of the process tests: cells that leave processes behind, and a /proc scan.

Every leftover sleeps a unique duration (``sleep 900.<n>``), so a scan of the host's
``/proc`` finds them whatever pid namespace they run in.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

from jupyter_agent.runtime.kernels.reaper import process_alive

#: A double-forked daemon (setsid between the forks), its std streams closed.
DAEMON = (
    "import os\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): os._exit(0)\n"
    "fd = os.open(os.devnull, os.O_RDWR)\n"
    "for i in (0, 1, 2): os.dup2(fd, i)\n"
    "os.execvp('sleep', ['sleep', {arg!r}])\n"
)


def marker() -> str:
    """A unique ``sleep`` argument (about 15 minutes)."""
    return f"900.{secrets.randbelow(10**9)}"


def leaving_cell(mark: str) -> str:
    """A cell starting a ``start_new_session`` child and a double-forked daemon."""
    return (
        "import subprocess, sys\n"
        f"child = subprocess.Popen(['sleep', {mark!r}], start_new_session=True)\n"
        f"subprocess.run([sys.executable, '-c', {DAEMON.format(arg=mark)!r}], check=True)\n"
        "print('started')\n"
    )


def leaving_bash(mark: str) -> str:
    """A bash line leaving a background job."""
    return f"sleep {mark} >/dev/null 2>&1 &"


def with_marker(mark: str) -> list[int]:
    """Live (not zombie) pids whose command line holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if mark.encode() in cmdline.split(b"\0") and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_none(mark: str, timeout_s: float = 5.0) -> list[int]:
    """Wait until no process holds ``mark``; the ones left after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    left = with_marker(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = with_marker(mark)
    return left


def wait_count(mark: str, count: int, timeout_s: float = 10.0) -> list[int]:
    """Wait until ``count`` processes hold ``mark`` (they exec ``sleep`` a moment late)."""
    deadline = time.monotonic() + timeout_s
    found = with_marker(mark)
    while len(found) < count and time.monotonic() < deadline:
        time.sleep(0.05)
        found = with_marker(mark)
    return found


def kill_all(mark: str) -> None:
    """Test cleanup: end whatever still holds ``mark``."""
    for pid in with_marker(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
