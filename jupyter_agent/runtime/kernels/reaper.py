"""Ending every process an agent kernel started: by tag, by process group, after a grace.

Each pool kernel is launched with ``JUPYTER_AGENT_KERNEL=<tag>`` in its environment;
every descendant inherits it (a ``start_new_session`` child, a double-forked daemon, a
``sleep 900 &`` of the bash tool), and ``/proc/<pid>/environ`` keeps the value a process
was started with. A tag is ``<key>/<instance>/<kernel>``:

- ``key``: a hash of the server's root dir (:func:`server_key`),
- ``instance``: ``<pid>.<start time>`` of the server process (:func:`instance_id`): unique
  per server run, and checkable (:func:`instance_alive`: pid reuse does not fool it),
- ``kernel``: the kernel's id.

:func:`reap` sends SIGTERM to the matching processes (and the given process groups),
waits up to a grace, SIGKILLs what is left and scans again until nothing matches (a
process forking while it dies is caught by the next scan). :func:`reap_orphans` ends the
processes of a crashed earlier instance of the same server (same key, instance no longer
alive). Only processes whose ``environ`` this process may read are seen (its own user's;
every one when root). A process that re-executes with a cleared environment escapes the
tag (its process group or the bwrap pid namespace still catches most such cases).

All of it is blocking (it reads ``/proc`` and sleeps): callers run it in a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = [
    "TAG_VAR",
    "instance_alive",
    "instance_id",
    "make_tag",
    "process_alive",
    "reap",
    "reap_orphans",
    "server_key",
    "tagged_processes",
]

#: The environment variable carrying a kernel's tag.
TAG_VAR = "JUPYTER_AGENT_KERNEL"
_TAG_PREFIX = TAG_VAR.encode() + b"="
_PROC = Path("/proc")
_POLL_S = 0.05


def server_key(root_dir: str) -> str:
    """A short stable hash of the server's root dir (the tag's first part)."""
    return hashlib.sha256(os.path.realpath(root_dir).encode()).hexdigest()[:12]


def _start_time(pid: int) -> str | None:
    # Field 22 of /proc/<pid>/stat (clock ticks since boot); the command name (field 2) may
    # hold spaces and parentheses, so split after its closing parenthesis.
    try:
        stat = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def instance_id(pid: int | None = None) -> str:
    """``<pid>.<start time>`` of this process (or ``pid``): unique while the system runs."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid) or 0}"


def instance_alive(instance: str) -> bool:
    """True when the process named by an :func:`instance_id` still runs."""
    pid, _, start = instance.partition(".")
    if not pid.isdigit():
        return False
    return _start_time(int(pid)) == start and process_alive(int(pid))


def make_tag(key: str, instance: str, kernel_id: str) -> str:
    """The tag value of one kernel."""
    return f"{key}/{instance}/{kernel_id}"


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie has ended; only unreaped)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def _tag_of(pid: int) -> str | None:
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or another user's
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(_TAG_PREFIX):
            return entry[len(_TAG_PREFIX) :].decode(errors="replace")
    return None


def tagged_processes(match: Callable[[str], bool]) -> dict[int, str]:
    """Every live process (not this one) whose tag ``match`` accepts: pid -> tag."""
    me = os.getpid()
    found: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            pid = int(entry.name)
            tag = _tag_of(pid)
            if tag is not None and match(tag) and process_alive(pid):
                found[pid] = tag
    return found


def _signal(pids: Iterable[int], pgids: Iterable[int], signum: int) -> None:
    for pgid in pgids:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signum)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def reap(
    match: Callable[[str], bool],
    *,
    pgids: Iterable[int] = (),
    grace_s: float = 1.0,
    timeout_s: float = 10.0,
) -> set[int]:
    """End every process whose tag ``match`` accepts, and the process groups ``pgids``.

    SIGTERM first; after ``grace_s`` SIGKILL to the survivors, then scans again (SIGKILL at
    once) until no match remains or ``timeout_s`` passed. Returns the pids signalled.
    ``pgids`` must be groups known to be the kernel's (a group id is reused once empty).
    """
    groups = [g for g in pgids if g > 1]
    pids = set(tagged_processes(match))
    signalled = set(pids)
    if not pids and not groups:
        return signalled
    _signal(pids, groups, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    _signal([p for p in pids if process_alive(p)], groups, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = set(tagged_processes(match))
        if not left:
            break
        signalled |= left
        _signal(left, (), signal.SIGKILL)
        time.sleep(_POLL_S)
    return signalled


def reap_orphans(key: str, *, grace_s: float = 1.0) -> set[int]:
    """End the tagged processes of this server's (``key``) instances that no longer run."""
    alive: dict[str, bool] = {}

    def orphan(tag: str) -> bool:
        tag_key, _, rest = tag.partition("/")
        instance = rest.partition("/")[0]
        if tag_key != key:
            return False
        if instance not in alive:
            alive[instance] = instance_alive(instance)
        return not alive[instance]

    return reap(orphan, grace_s=grace_s)
