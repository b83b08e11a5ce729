"""What the deploy tests share (JupyterHub, kernel gateway, PostgreSQL, load).

- Every test under ``tests/deploy/`` is marked ``deploy`` (``-m "not deploy"`` leaves them
  out; the README's test command runs them).
- :func:`deploy_required` is how a test says a part it needs is missing: a skip on a
  developer's machine, a failure when ``CI=true`` (CI must not go green by skipping).
- The autouse ``no_process_left`` fixture fails a test that leaves a process of its own
  behind (a server, a kernel, a proxy): deploy tests start real processes and must stop
  every one of them. What a module's own gateway or Hub (there before the test) starts is
  theirs, and their fixtures check it when they stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["deploy_required", "descendants", "live_processes", "on_ci"]

_HERE = Path(__file__).parent


def on_ci() -> bool:
    """True when running under CI (``CI=true``): missing parts fail there."""
    return os.environ.get("CI", "").lower() == "true"


def deploy_required(what: str) -> NoReturn:
    """A part the test needs is missing: skip, or fail under ``CI=true``.

    ``what`` says which part and how to get it (it is the skip or failure message).
    """
    if on_ci():
        pytest.fail(f"required on CI: {what}", pytrace=False)
    pytest.skip(what)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.deploy)


def live_processes() -> dict[int, tuple[int, int]]:
    """``{pid: (parent pid, process group)}`` of the live processes (zombies and dead ones
    left out), from ``/proc``."""
    found: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) < 3 or fields[0] in ("Z", "X"):
            continue
        found[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return found


def _parents() -> dict[int, int]:
    """``{pid: parent pid}`` of the live processes."""
    return {pid: parent for pid, (parent, _group) in live_processes().items()}


def descendants(pid: int | None = None) -> set[int]:
    """Live descendants of ``pid`` (this process by default), read from ``/proc``.

    Zombies count as gone (they are only waiting for their parent to reap them).
    """
    root = os.getpid() if pid is None else pid
    parents = _parents()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "?"


def _started_by_the_test(before: set[int]) -> set[int]:
    """The live descendants not there ``before`` and not under one that was: a kernel a
    module's gateway or Hub (started before the test) started is theirs to stop."""
    parents = _parents()
    me = os.getpid()
    left: set[int] = set()
    for pid in descendants() - before:
        parent = parents.get(pid)
        while parent is not None and parent != me and parent not in before:
            parent = parents.get(parent)
        if parent == me:
            left.add(pid)
    return left


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """Fail the test when a process it started outlives it (after a grace period)."""
    if not Path("/proc").is_dir():  # pragma: no cover - Linux only
        yield
        return
    before = descendants()
    yield
    deadline = time.monotonic() + 20
    left = _started_by_the_test(before)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _started_by_the_test(before)
    if left:
        names = {pid: _command(pid) for pid in left}
        for pid in left:  # do not let them spoil the next test
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"processes left behind by the test: {names}", pytrace=False)
