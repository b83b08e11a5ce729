"""A deploy's code checks in a process of their own: out of the server, under a deadline,
away from its secrets.

:meth:`CheckProcess.run` runs the checks that execute a program's code (import, smoke test,
its own scenarios) in ``python -m jupyter_agent.programs.check_worker``, started with
``asyncio.create_subprocess_exec`` (the event loop never waits on it):

- its environment is the agent kernels' (``KernelPool.kernel_env``: the filter of
  :mod:`~jupyter_agent.runtime.envfilter`, without the variables credential references
  name), with ``HOME``, ``TMPDIR`` and the working dir a fresh temp dir, removed after;
- under the kernels' sandbox (``KernelPool.kernel_sandbox``): ``bwrap`` as a kernel (file
  system read-only but its temp dir, ``/tmp`` and home empty, the server's runtime and
  agent data dirs hidden, its own pid namespace), ``user:NAME`` as that user;
- in a session of its own, tagged as kernels are (:mod:`~jupyter_agent.runtime.reaper`):
  past the deadline (``timeout_s``, the trait ``JupyterAgent.program_check_timeout_s``)
  its process group is killed and the deploy refused (reason ``program_check_timeout``);
  after any end every process it left is reaped;
- its verdict is one JSON line on stdout, ``{"ok": true, "hash"}`` or ``{"ok": false,
  "message"}``; the server reads nothing else from it (the files, hash, entry and uses it
  stores are its own :func:`~jupyter_agent.programs.deploy_checks.check_static` result,
  and an ``ok`` must name that hash). No verdict (the process crashed, or the program's
  code ended it) refuses the deploy.

At most :data:`PARALLEL` checks run at once (each is a Python process for a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import ProgramRefused, Unavailable
from jupyter_agent.programs.deploy_checks import Checked
from jupyter_agent.runtime.envfilter import filter_env
from jupyter_agent.runtime.reaper import TAG_VAR, instance_id, make_tag, reap, server_key
from jupyter_agent.runtime.sandbox import KernelPlace, Sandbox, bwrap_prefix

__all__ = ["DEFAULT_TIMEOUT_S", "PARALLEL", "TIMEOUT_TRAIT", "WORKER", "CheckProcess"]

log = logging.getLogger(__name__)

#: The module the check process runs.
WORKER: Final = "jupyter_agent.programs.check_worker"
#: The deadline's default, in seconds.
DEFAULT_TIMEOUT_S: Final = 20.0
#: The trait that sets the deadline, as messages name it.
TIMEOUT_TRAIT: Final = "JupyterAgent.program_check_timeout_s"
#: Checks running at once.
PARALLEL: Final = 2
#: The most of the verdict read (stdout), and of stderr kept for the log.
_VERDICT_BYTES: Final = 64 * 1024
_STDERR_TAIL: Final = 2048


def _server_env() -> dict[str, str]:
    return filter_env(os.environ)


class CheckProcess:
    """Runs deploy checks out of process (see the module docstring).

    ``env``: the environment to start from (called at each check; default the server's,
    filtered); ``sandbox`` and ``hidden`` (folders a ``bwrap`` sandbox hides); ``tag``
    makes a process's reaper tag from a name (default: this server instance's);
    ``scratch``: where the temp dirs go (default the system's temp dir).
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        env: Callable[[], Mapping[str, str]] = _server_env,
        sandbox: Sandbox | None = None,
        hidden: tuple[str, ...] = (),
        tag: Callable[[str], str] | None = None,
        scratch: Path | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self._env = env
        self.sandbox = sandbox or Sandbox("none")
        self._hidden = hidden
        key, instance = server_key(os.getcwd()), instance_id()
        self._tag = tag or (lambda name: make_tag(key, instance, name))
        self._scratch = scratch
        self._slots: asyncio.Semaphore | None = None

    @classmethod
    def for_pool(cls, pool: Any, *, timeout_s: float) -> CheckProcess:
        """Checks started as ``pool``'s kernels are (its environment, sandbox, hidden
        folders and tags); a pool without them (a test's stand-in): the defaults."""
        starts = getattr(pool, "starts", None)
        env = getattr(pool, "kernel_env", None)
        return cls(
            timeout_s=timeout_s,
            env=env if callable(env) else _server_env,
            sandbox=getattr(pool, "sandbox", None),
            hidden=tuple(starts.hidden_dirs()) if starts is not None else (),
            tag=starts.tag if starts is not None else None,
        )

    async def run(self, checked: Checked) -> None:
        """Run the code checks of ``checked`` (a :func:`check_static` result) in a check
        process; ProgramRefused when they fail or pass the deadline, Unavailable when the
        process cannot start. Nothing of it is left afterwards."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(PARALLEL)
        async with self._slots:
            base = await asyncio.to_thread(self._prepare)
            try:
                verdict = await self._spawn(checked, base)
            finally:
                await asyncio.to_thread(shutil.rmtree, base, True)
        if verdict.get("ok") is True:
            if verdict.get("hash") != checked.hash:
                raise ProgramRefused("the check process checked other files than these")
            return
        message = verdict.get("message")
        raise ProgramRefused(str(message)[:1000] if message else "the checks failed")

    # --- the process ---------------------------------------------------------------------

    def _prepare(self) -> Path:
        """A fresh temp dir holding ``check/scratch`` (the process's cwd, HOME, TMPDIR)
        and ``check/runtime``, owned by the sandbox's user when there is one."""
        base = Path(tempfile.mkdtemp(prefix="ja-check-", dir=self._scratch))
        place = self._place(base)
        for folder in (place.kernel_dir, place.runtime_dir, place.scratch_dir):
            folder.mkdir(mode=0o700, exist_ok=True)
            if self.sandbox.kind == "user":
                entry = pwd.getpwnam(str(self.sandbox.user))
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        if self.sandbox.kind == "user":
            os.chmod(base, 0o711)  # the user traverses it, lists nothing
        return base

    @staticmethod
    def _place(base: Path) -> KernelPlace:
        return KernelPlace("check", base, "")

    def _command(self, base: Path) -> tuple[list[str], dict[str, Any]]:
        """The argv and the extra ``create_subprocess_exec`` arguments (a user to be)."""
        argv = [sys.executable, "-m", WORKER]
        place = self._place(base)
        if self.sandbox.kind == "bwrap":
            prefix = bwrap_prefix(place, root_dir=str(place.scratch_dir), hidden=list(self._hidden))
            return [*prefix, *argv], {}
        if self.sandbox.kind == "user":
            entry = pwd.getpwnam(str(self.sandbox.user))
            return argv, {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        return argv, {}

    async def _spawn(self, checked: Checked, base: Path) -> dict[str, Any]:
        scratch = str(self._place(base).scratch_dir)
        tag = self._tag(f"check-{uuid.uuid4().hex[:12]}")
        env = dict(self._env())
        env.update(
            {TAG_VAR: tag, "HOME": scratch, "TMPDIR": scratch, "PYTHONDONTWRITEBYTECODE": "1"}
        )
        env.pop("JUPYTER_RUNTIME_DIR", None)
        argv, extra = await asyncio.to_thread(self._command, base)
        payload = json.dumps({"name": checked.name, "files": checked.files}).encode()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,
                **extra,
            )
        except OSError as exc:
            raise Unavailable(f"cannot start the program check process: {exc}") from None
        try:
            out, err = await asyncio.wait_for(_talk(proc, payload), self.timeout_s)
        except asyncio.TimeoutError:
            raise ProgramRefused(
                f"the checks ran past {self.timeout_s:g} s ({TIMEOUT_TRAIT}) and were"
                " stopped: does the program's import or its smoke test wait or loop?",
                reason="program_check_timeout",
            ) from None
        finally:
            if proc.returncode is None:  # the deadline, or the request was cancelled
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
            # Whatever it started (a daemon of the program's import) ends with it.
            await asyncio.to_thread(reap, lambda found: found == tag, grace_s=0.2)
        return _verdict(out, err, proc.returncode)


async def _talk(proc: asyncio.subprocess.Process, payload: bytes) -> tuple[bytes, bytes]:
    """Send the deploy, read the verdict (bounded) and stderr's tail, wait for the end."""
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None
    assert stdout is not None
    assert stderr is not None

    async def send() -> None:
        with contextlib.suppress(ConnectionError):  # it ended without reading: no verdict
            stdin.write(payload)
            await stdin.drain()
            stdin.close()

    out, err, _, _ = await asyncio.gather(
        _read(stdout, head=True), _read(stderr, head=False), send(), proc.wait()
    )
    return out, err


async def _read(stream: asyncio.StreamReader, *, head: bool) -> bytes:
    """All of ``stream`` read; its first :data:`_VERDICT_BYTES` (``head``) or its last
    :data:`_STDERR_TAIL` bytes kept."""
    kept = b""
    while chunk := await stream.read(65536):
        if head:
            kept = (kept + chunk)[:_VERDICT_BYTES] if len(kept) < _VERDICT_BYTES else kept
        else:
            kept = (kept + chunk)[-_STDERR_TAIL:]
    return kept


def _verdict(out: bytes, err: bytes, code: int | None) -> dict[str, Any]:
    """The verdict line of ``out``; a refusal naming the exit and stderr's last line when
    there is none."""
    lines = out.decode("utf-8", errors="replace").strip().splitlines()
    try:
        verdict = json.loads(lines[-1]) if len(lines) == 1 else None
    except ValueError:
        verdict = None
    if isinstance(verdict, dict) and isinstance(verdict.get("ok"), bool):
        return verdict
    tail = err.decode("utf-8", errors="replace").strip().splitlines()[-1:]
    log.info("program check process: no verdict (exit %s): %s", code, err[-_STDERR_TAIL:])
    why = f": {tail[0][:200]}" if tail else ""
    return {
        "ok": False,
        "message": f"the check process ended without a verdict (exit {code}{why}): the"
        " program's code ended it (os._exit, a signal), or it could not run",
    }
