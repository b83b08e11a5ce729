"""Where and how an agent kernel is launched: its private dirs, its tag, its sandbox.

``KernelPool.kernel_sandbox`` is one of

- ``none`` (default): the kernel runs as the server's user, unwrapped. Its connection file
  and ``JUPYTER_RUNTIME_DIR`` are a private dir, so the server's ``jpserver-*.json`` is not
  where Jupyter tools look; the kernel can still read it by path (same OS user).
- ``bwrap``: Debian's bubblewrap. The whole file system read-only; the server's root dir
  and the kernel's scratch and runtime dirs writable; ``/tmp`` and the home dir empty
  (the Python environment's own folders inside them are bound back read-only); the
  server's runtime dir, config dirs and the agent's data dir hidden (and the database
  file wherever ``db_url`` puts it: shown empty); its own pid namespace and
  ``/proc`` (no view of the server's processes); dies with the server. Network is shared
  (the kernel's ports are TCP). Interrupts go by message.
- ``user:NAME``: the kernel runs as OS user NAME (the server must be root, or hold
  CAP_SETUID and CAP_SETGID); its private dirs are NAME's.

:func:`check_sandbox` refuses an unavailable choice with :class:`SandboxUnavailable`
(a message naming the trait and the fix). :func:`prepare_launch` makes one kernel's dirs
and returns its :class:`LaunchPlan` (what :mod:`~jupyter_agent.runtime.kernels.provisioner` does
with the command) and the environment entries to add. Blocking (files, a subprocess):
callers run it off the event loop.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "TRAIT",
    "KernelPlace",
    "LaunchPlan",
    "Sandbox",
    "SandboxUnavailable",
    "bwrap_prefix",
    "check_sandbox",
    "parse_sandbox",
    "prepare_launch",
]

#: The trait's full name, as messages give it.
TRAIT = "KernelPool.kernel_sandbox"
_CAP_SETGID, _CAP_SETUID = 6, 7


class SandboxUnavailable(Exception):
    """The configured sandbox cannot work here; the message names the trait and the fix."""


@dataclass(frozen=True)
class Sandbox:
    """A parsed ``kernel_sandbox`` value: ``kind`` is none, bwrap or user."""

    kind: str
    user: str | None = None

    def __str__(self) -> str:
        return f"user:{self.user}" if self.kind == "user" else self.kind


def parse_sandbox(value: str) -> Sandbox:
    """The :class:`Sandbox` of a trait value; ValueError for a malformed one."""
    if value in ("none", "bwrap"):
        return Sandbox(value)
    if value.startswith("user:") and value[5:].strip():
        return Sandbox("user", value[5:].strip())
    raise ValueError(f"{TRAIT} must be 'none', 'bwrap' or 'user:NAME', not {value!r}")


@dataclass(frozen=True)
class KernelPlace:
    """One kernel's private dirs (``base/<kernel_id>``, 0700) and its tag."""

    kernel_id: str
    base: Path
    tag: str

    @property
    def kernel_dir(self) -> Path:
        """The folder holding both others (removed when the kernel is discarded)."""
        return self.base / self.kernel_id

    @property
    def runtime_dir(self) -> Path:
        """The kernel's ``JUPYTER_RUNTIME_DIR``, holding its connection file."""
        return self.kernel_dir / "runtime"

    @property
    def scratch_dir(self) -> Path:
        """A writable folder of the kernel's own (``TMPDIR`` in a sandbox)."""
        return self.kernel_dir / "scratch"

    @property
    def connection_file(self) -> Path:
        """Where the connection file is written."""
        return self.runtime_dir / f"kernel-{self.kernel_id}.json"


@dataclass(frozen=True)
class LaunchPlan:
    """What the provisioner applies: JSON-able (``start_kernel`` keeps it for restarts)."""

    connection_file: str
    prefix: list[str] = field(default_factory=list)
    interrupt_mode: str | None = None
    uid: int | None = None
    gid: int | None = None
    #: Another environment's interpreter for the launch command (None: the kernelspec's).
    python: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``jupyter_agent_launch`` keyword's value."""
        return {
            "connection_file": self.connection_file,
            "prefix": list(self.prefix),
            "interrupt_mode": self.interrupt_mode,
            "uid": self.uid,
            "gid": self.gid,
            "python": self.python,
        }


def _fix(sandbox: Sandbox) -> str:
    other = "'none'" if sandbox.kind != "none" else "another value"
    if sandbox.kind == "bwrap":
        return f"install bubblewrap (apt-get install bubblewrap) or set {TRAIT} = {other}"
    return f"run the server as root, create the user, or set {TRAIT} = {other}"


def _has_setuid_caps() -> bool:
    if os.geteuid() == 0:
        return True
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
                return bool(caps >> _CAP_SETUID & 1 and caps >> _CAP_SETGID & 1)
    except (OSError, ValueError):
        pass
    return False


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def check_sandbox(sandbox: Sandbox) -> None:
    """Refuse (:class:`SandboxUnavailable`) a sandbox that cannot work on this machine.

    ``bwrap``: the binary is on PATH and starts a process in new namespaces (a trial run
    of ``true``, about 10 ms). ``user:NAME``: NAME exists, is not the server's own user,
    the server may switch to it, and NAME can run the kernel's Python (a trial import,
    about 0.5 s).
    """
    if sandbox.kind == "none":
        return
    if sys.platform != "linux":
        raise SandboxUnavailable(
            f"{TRAIT} = {str(sandbox)!r} needs Linux; fix: set {TRAIT} = 'none'"
        )
    if sandbox.kind == "bwrap":
        binary = _bwrap()
        if binary is None:
            raise SandboxUnavailable(
                f"{TRAIT} = 'bwrap' but no bwrap binary is on PATH; fix: {_fix(sandbox)}"
            )
        try:
            trial = subprocess.run(
                [*_base_args(binary), "--", "true"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"{TRAIT} = 'bwrap': {binary} did not run ({exc})") from None
        if trial.returncode != 0:
            reason = (trial.stderr or trial.stdout).strip().splitlines()
            raise SandboxUnavailable(
                f"{TRAIT} = 'bwrap' but bwrap cannot create its namespaces here "
                f"({reason[-1] if reason else f'exit {trial.returncode}'}); fix: allow "
                f"unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), "
                f"run the server as root, or set {TRAIT} = 'none'"
            )
        return
    assert sandbox.user is not None
    try:
        entry = pwd.getpwnam(sandbox.user)
    except KeyError:
        raise SandboxUnavailable(
            f"{TRAIT} = {str(sandbox)!r} but there is no OS user {sandbox.user!r}; fix: "
            f"create it (useradd --system {sandbox.user}) or set {TRAIT} = 'none'"
        ) from None
    if entry.pw_uid == os.geteuid():
        raise SandboxUnavailable(
            f"{TRAIT} = {str(sandbox)!r} is the server's own user (no isolation); fix: "
            f"name another user or set {TRAIT} = 'none'"
        )
    if not _has_setuid_caps():
        raise SandboxUnavailable(
            f"{TRAIT} = {str(sandbox)!r} but the server (uid {os.geteuid()}) may not switch "
            f"users; fix: {_fix(sandbox)}"
        )
    _check_user_runs_python(sandbox, entry)


def _check_user_runs_python(sandbox: Sandbox, entry: pwd.struct_passwd) -> None:
    # The kernel runs this interpreter as that user: it must be able to reach it (a
    # Python under a 0700 home is not) and import the kernel.
    try:
        trial = subprocess.run(
            [sys.executable, "-c", "import jupyter_agent.kernel"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd="/",
            env={"PATH": os.environ.get("PATH", os.defpath), "HOME": "/"},
            user=entry.pw_uid,
            group=entry.pw_gid,
            extra_groups=[],
        )
        failure = trial.stderr.strip().splitlines()[-1:] if trial.returncode else []
    except (OSError, subprocess.SubprocessError) as exc:
        failure = [str(exc)]
    if failure:
        raise SandboxUnavailable(
            f"{TRAIT} = {str(sandbox)!r} but user {sandbox.user!r} cannot run the kernel's "
            f"Python {sys.executable} ({failure[0]}); fix: install Python and jupyter-agent "
            f"where that user can read them, or set {TRAIT} = 'none'"
        )


def _base_args(binary: str) -> list[str]:
    return [
        binary,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-all",
        "--share-net",
        "--die-with-parent",
        "--new-session",
    ]  # fmt: skip


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _python_dirs() -> list[str]:
    # What the kernel needs to import: the environment and every sys.path folder (an
    # editable install's source, a .pth path), to bind back inside hidden folders.
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    dirs.update(p for p in sys.path if p and os.path.isdir(p))
    return sorted(os.path.realpath(d) for d in dirs)


def _hiding(hidden: list[str], root: str) -> list[str]:
    # Folders mounted empty (never one holding the root dir); files (a database outside
    # the hidden folders) replaced by an empty one, unless they are in an emptied folder.
    paths = sorted({os.path.realpath(h) for h in hidden})
    folders = [p for p in paths if os.path.isdir(p) and not _inside(root, p)]
    args: list[str] = []
    for folder in folders:
        args += ["--tmpfs", folder]
    for path in paths:
        if os.path.isfile(path) and not any(_inside(path, f) for f in folders):
            args += ["--ro-bind", "/dev/null", path]
    return args


def bwrap_prefix(
    place: KernelPlace, *, root_dir: str, hidden: list[str], binary: str | None = None
) -> list[str]:
    """The ``bwrap ... --`` arguments for one kernel (see the module docstring).

    ``hidden``: folders mounted empty (the server's runtime dir, the agent's data dir, its
    config dirs), unless they hold the root dir, and files replaced by ``/dev/null`` (a
    SQLite database elsewhere and its journal; in the root dir too). The order matters:
    empty /tmp and home, the Python folders back, the root dir writable, the hidden
    folders empty, the kernel's own dirs.
    """
    binary = binary or _bwrap() or "bwrap"
    root = os.path.realpath(root_dir)
    args = [*_base_args(binary), "--unsetenv", "JPY_PARENT_PID"]  # ppid is bwrap's init
    empty = ["/tmp"]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and os.path.isdir(home) and not _inside(home, root):
        args += ["--tmpfs", home]
        empty.append(home)
    for folder in _python_dirs():
        # Never one that is, or holds, an emptied folder (a sys.path entry that is the
        # server's cwd = home would bring the whole home back).
        if (
            any(_inside(folder, e) for e in empty)
            and not any(_inside(e, folder) for e in empty)
            and not _inside(folder, root)
        ):
            args += ["--ro-bind", folder, folder]
    args += ["--bind", root, root]
    # A root holding /proc, /dev or /tmp (root_dir "/") binds the host's back: mount them
    # again over it.
    for mount, flag in (("/proc", "--proc"), ("/dev", "--dev"), ("/tmp", "--tmpfs")):
        if _inside(mount, root):
            args += [flag, mount]
    args += _hiding(hidden, root)
    for own in (place.runtime_dir, place.scratch_dir):
        args += ["--bind", str(own), str(own)]
    return [*args, "--"]


def kernels_base(data_dir: Path, key: str, instance: str, sandbox: Sandbox) -> Path:
    """The folder of this server instance's kernel dirs.

    ``{data_dir}/kernels/<key>/<instance>``, except for ``user:NAME`` when NAME cannot
    traverse ``data_dir`` (a home of mode 0700): then under the temp dir, in a folder
    others may traverse but not list (0711).
    """
    base = data_dir / "kernels" / key / instance
    if sandbox.kind != "user" or _others_traverse(data_dir):
        return base
    return Path(tempfile.gettempdir()) / f"jupyter-agent-kernels-{os.geteuid()}" / key / instance


def _others_traverse(folder: Path) -> bool:
    path = folder.resolve()
    for part in [path, *path.parents]:
        try:
            if not part.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:  # not made yet: made 0711 by prepare_launch's parents
            continue
    return True


def _make_parents(path: Path) -> None:
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o711, exist_ok=True)
    # Under a shared temp dir another user could have made (or linked) the folder first.
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxUnavailable(f"{path} is not the server's own folder: refusing to use it")


def prepare_launch(
    place: KernelPlace,
    sandbox: Sandbox,
    *,
    root_dir: str,
    hidden: list[str],
) -> tuple[LaunchPlan, dict[str, str]]:
    """Make the kernel's dirs (0700) and return its launch plan and environment additions.

    The environment gets the tag and ``JUPYTER_RUNTIME_DIR``; in a sandbox also
    ``IPYTHONDIR`` and ``TMPDIR`` in the scratch dir (the server's may be hidden or not
    writable), and for ``user:NAME`` the user's ``HOME`` (the scratch dir when it has
    none), ``USER`` and ``LOGNAME``.
    """
    from jupyter_agent.runtime.kernels.reaper import TAG_VAR

    _make_parents(place.base)
    for folder in (place.kernel_dir, place.runtime_dir, place.scratch_dir):
        folder.mkdir(mode=0o700, exist_ok=True)
    env = {TAG_VAR: place.tag, "JUPYTER_RUNTIME_DIR": str(place.runtime_dir)}
    plan = LaunchPlan(connection_file=str(place.connection_file))
    if sandbox.kind == "none":
        return plan, env
    env["IPYTHONDIR"] = str(place.scratch_dir / ".ipython")
    env["TMPDIR"] = str(place.scratch_dir)
    if sandbox.kind == "bwrap":
        prefix = bwrap_prefix(place, root_dir=root_dir, hidden=hidden)
        return LaunchPlan(plan.connection_file, prefix, "message"), env
    assert sandbox.user is not None
    entry = pwd.getpwnam(sandbox.user)
    for folder in (place.kernel_dir, place.runtime_dir, place.scratch_dir):
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    home = entry.pw_dir if os.path.isdir(entry.pw_dir) else str(place.scratch_dir)
    env.update(HOME=home, USER=sandbox.user, LOGNAME=sandbox.user)
    return LaunchPlan(plan.connection_file, uid=entry.pw_uid, gid=entry.pw_gid), env
