"""Starting and ending the agent kernels of one pool (:mod:`jupyter_agent.runtime.kernels.pool`).

A kernel starts through the server's kernel manager with the filtered environment, private
dirs and a tag every descendant inherits (:mod:`jupyter_agent.runtime.kernels.sandbox`), through the
agent kernelspec's provisioner when it has it; ending one shuts it down and ends every
process carrying its tag (:mod:`jupyter_agent.runtime.kernels.reaper`). At most one start runs per
core: a launch blocks the event loop a few ms and loads a core for about a second. A kernel
that dies while starting (a port taken between pick and bind) is started again, up to
three times. A start is never cancelled half way by this module's callers (it would leave a
half-registered kernel in the manager).

On a gateway (jupyter_server's ``GatewayMappingKernelManager``) a kernel is started by the
gateway, which names it and owns its processes: no launch plan, private dirs or tag are
made here, and ending one is the gateway's shutdown (the local reaping finds nothing).

:meth:`KernelStarts.plan` decides, once at server start, whether starts carry a launch
plan, and refuses a sandbox that cannot work (a kernelspec without the agent's
provisioner, a gateway, a bwrap that cannot run).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_agent.exceptions import KernelDied, KernelError
from jupyter_agent.runtime.environments.interpreters import make_shim
from jupyter_agent.runtime.kernels import reaper
from jupyter_agent.runtime.kernels.handle import AgentKernelHandle
from jupyter_agent.runtime.kernels.provisioner import LAUNCH_KEY, PROVISIONER_NAME
from jupyter_agent.runtime.kernels.remote import RemoteKernels
from jupyter_agent.runtime.kernels.sandbox import (
    TRAIT,
    KernelPlace,
    Sandbox,
    SandboxUnavailable,
    check_sandbox,
    kernels_base,
    prepare_launch,
)

__all__ = ["KernelStarts", "start_slots"]

log = logging.getLogger(__name__)

# SIGTERM to SIGKILL, for a discarded kernel's leftover processes
_REAP_GRACE_S = 1.0
# A kernel that dies while starting is started again (a port taken between pick and bind)
_START_ATTEMPTS = 3


def start_slots() -> int:
    """How many kernel starts may run at once: one per core, at most four."""
    return max(1, min(4, os.cpu_count() or 1))


class KernelStarts:
    """Launches and ends the kernels of one server's pool.

    ``handles`` holds every kernel started and not yet shut down (warm or held by a run),
    ``places`` the private dirs and tag of each (``kernel_id`` -> place) until its
    processes were ended.
    """

    def __init__(
        self,
        kernel_manager: Any,
        *,
        root_dir: str,
        data_dir: Path,
        server_runtime_dir: str,
        sandbox: Sandbox,
        hidden: Sequence[str] = (),
        remote: RemoteKernels | None = None,
    ) -> None:
        self._km = kernel_manager
        self._root_dir = root_dir
        self._data_dir = data_dir
        self._server_runtime_dir = server_runtime_dir
        self._hidden = list(hidden)
        self._sandbox = sandbox
        self._remote = remote
        self.remote = remote is not None
        """Kernels run on a gateway: no local process, dirs or tag to end here."""
        self.key = reaper.server_key(root_dir)
        self.instance = reaper.instance_id()
        self.base = kernels_base(data_dir, self.key, self.instance, sandbox)
        self.places: dict[str, KernelPlace] = {}
        self.handles: dict[str, AgentKernelHandle] = {}
        # At most one start per core at a time: a kernel launch blocks the event loop (the
        # fork and exec, its sockets) and loads a core for about a second; 32 at once
        # starved the server (agent/status p99 over a second).
        self._slots = asyncio.Semaphore(start_slots())

    def plan(self, kernel_name: str) -> bool:
        """Whether kernels start through the agent's provisioner (a launch plan: private
        dirs, tag, sandbox); refuse a sandbox that cannot work here, or a kernelspec that
        cannot carry it.

        Blocking (a trial bwrap run, a kernelspec read): at server start, or in a thread.
        Raises :class:`~jupyter_agent.runtime.kernels.sandbox.SandboxUnavailable` naming
        the trait and the fix. A kernelspec without the agent's provisioner (installed by
        an older version) only works unsandboxed, and then without private runtime dirs (a
        warning). A gateway's kernels are never planned.
        """
        if self._remote is not None:
            return self._plan_remote(self._remote.url, kernel_name)
        check_sandbox(self._sandbox)
        planned = self._spec_has_provisioner(kernel_name)
        if not planned and self._sandbox.kind != "none":
            raise SandboxUnavailable(
                f"{TRAIT} = {str(self._sandbox)!r} but the kernelspec {kernel_name!r} "
                f"does not use {PROVISIONER_NAME} (installed by an older version); fix: "
                "jupyter-agent kernel install --sys-prefix (or --user), or set "
                f"{TRAIT} = 'none'"
            )
        if not planned:
            log.warning(
                "kernelspec %r does not use %s: agent kernels start without private runtime "
                "dirs; reinstall it with: jupyter-agent kernel install --sys-prefix",
                kernel_name,
                PROVISIONER_NAME,
            )
        return planned

    def _plan_remote(self, url: str, kernel_name: str) -> bool:
        """A gateway's kernels: refuse a sandbox (the gateway's host isolates them, not
        this server), say once what the local-only parts do. Never planned."""
        if self._sandbox.kind != "none":
            raise SandboxUnavailable(
                f"{TRAIT} = {str(self._sandbox)!r} but agent kernels run on a gateway "
                f"({url}), where this server cannot sandbox them; fix: isolate "
                f"them on the gateway's side and set {TRAIT} = 'none'"
            )
        log.warning(
            "agent kernels run on the gateway at %s: no private connection dirs, process "
            "tags, process-group reaping or sandbox here (the gateway owns the kernels' "
            "processes); the kernelspec %r must be installed there",
            url,
            kernel_name,
        )
        return False

    def _spec_has_provisioner(self, kernel_name: str) -> bool:
        ksm = getattr(self._km, "kernel_spec_manager", None)
        if ksm is None:
            return True
        try:
            spec = ksm.get_kernel_spec(kernel_name)
        except Exception:  # no such kernelspec: the start will say so
            return True
        provisioner = (getattr(spec, "metadata", None) or {}).get("kernel_provisioner") or {}
        return bool(provisioner.get("provisioner_name") == PROVISIONER_NAME)

    def hidden_dirs(self) -> list[str]:
        """What a sandbox hides from the process it runs (a kernel, a program check's):
        the server's runtime dir, the agent's data dir and the extra ``hidden`` paths
        (config dirs, a SQLite database elsewhere)."""
        return [self._server_runtime_dir, str(self._data_dir), *self._hidden]

    def tag(self, name: str) -> str:
        """The reaper tag of this server instance's process ``name`` (a kernel's id)."""
        return reaper.make_tag(self.key, self.instance, name)

    def reap_leftovers(self) -> None:
        """End what a crashed earlier run of this server left (blocking: in a thread)."""
        ended = reaper.reap_orphans(self.key)
        if ended:
            log.warning("ended %d process(es) left by an earlier agent kernel", len(ended))
        # The kernel dirs of instances of this server that no longer run.
        with contextlib.suppress(OSError):
            for folder in self.base.parent.iterdir():
                if folder.name != self.instance and not reaper.instance_alive(folder.name):
                    shutil.rmtree(folder, ignore_errors=True)

    async def start(
        self,
        *,
        kernel_name: str,
        env: dict[str, str],
        planned: bool,
        liveness_interval_s: float,
        python: str | None = None,
    ) -> AgentKernelHandle:
        """A started, connected kernel (``planned``: through the agent's provisioner;
        ``python``: under another environment's interpreter, lent this package through
        ``PYTHONPATH``: :mod:`jupyter_agent.runtime.environments.interpreters`).

        Waits for a start slot; a kernel dying while starting is started again. Raises
        what the last attempt raised.
        """
        async with self._slots:
            for attempt in range(_START_ATTEMPTS):
                try:
                    return await self._start_one(
                        kernel_name, dict(env), planned, liveness_interval_s, python
                    )
                except KernelDied:
                    # Ports are picked free and bound by the kernel a moment later: another
                    # process can take one in between ("Address already in use"), and the
                    # kernel exits. A fresh start picks fresh ports.
                    if attempt + 1 == _START_ATTEMPTS:
                        raise
                    log.warning("an agent kernel died while starting; starting another")
            raise AssertionError("unreachable")

    async def _start_one(
        self,
        kernel_name: str,
        env: dict[str, str],
        planned: bool,
        liveness_interval_s: float,
        python: str | None = None,
    ) -> AgentKernelHandle:
        kernel_id = str(uuid.uuid4())
        if python is not None and not (planned and not self.remote):
            raise KernelError(
                "KernelPool.python needs the agent kernelspec's provisioner and local kernels "
                "(reinstall it: jupyter-agent kernel install --sys-prefix)"
            )
        launch: dict[str, Any] = {}
        remote = self._remote
        if planned and not self.remote:
            place = KernelPlace(
                kernel_id, self.base, reaper.make_tag(self.key, self.instance, kernel_id)
            )
            self.places[kernel_id] = place
            hidden = self.hidden_dirs()
            try:
                plan, extra = await asyncio.to_thread(
                    prepare_launch, place, self._sandbox, root_dir=self._root_dir, hidden=hidden
                )
            except BaseException:
                await self.end_processes(kernel_id, None)
                raise
            env.update(extra)
            if python is not None:
                plan = dataclasses.replace(plan, python=python)
                shim = await asyncio.to_thread(make_shim, place.kernel_dir)
                env["PYTHONPATH"] = str(shim)  # this package only, not the server's others
            launch[LAUNCH_KEY] = plan.to_json()
            if self._sandbox.kind != "none":
                launch["cwd"] = self._root_dir  # the server's cwd may be hidden or closed
        if remote is not None:  # the gateway passes on only some names
            env = {k: v for k, v in env.items() if remote.passes_env(k)}
        else:
            launch["kernel_id"] = kernel_id
        # (A gateway's manager takes a kernel_id as "connect to this running kernel": the
        # gateway names its kernels itself.)
        try:
            kernel_id = await ensure_async(
                self._km.start_kernel(kernel_name=kernel_name, env=env, **launch)
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await ensure_async(self._km.shutdown_kernel(kernel_id, now=True))
            await self.end_processes(kernel_id, None)
            raise
        handle = AgentKernelHandle(
            self._km, str(kernel_id), liveness_interval_s=liveness_interval_s, remote=remote
        )
        self.handles[handle.kernel_id] = handle
        try:
            await handle.connect()
        except BaseException:
            await self.shutdown(handle)
            raise
        return handle

    async def shutdown(self, handle: AgentKernelHandle) -> None:
        """Shut the kernel down and end its processes."""
        self.handles.pop(handle.kernel_id, None)
        await handle.close()
        await self.shutdown_id(handle.kernel_id)

    async def shutdown_id(self, kernel_id: str) -> None:
        """Shut down a kernel known by its id only, and end its processes."""
        pgid = self._pgid(kernel_id)
        with contextlib.suppress(Exception):
            await ensure_async(self._km.shutdown_kernel(kernel_id, now=True))
        await self.end_processes(kernel_id, pgid)

    def _pgid(self, kernel_id: str) -> int | None:
        # The launcher starts each kernel in its own session: its group is its pid.
        try:
            pgid = self._km.get_kernel(kernel_id).provisioner.pgid
        except Exception:
            return None
        return pgid if isinstance(pgid, int) else None

    async def end_processes(self, kernel_id: str, pgid: int | None) -> None:
        """End every process carrying the kernel's tag (and its group); remove its dirs."""
        place = self.places.pop(kernel_id, None)
        if place is None:
            return
        try:
            await asyncio.to_thread(_reap_place, place, pgid)
        except Exception:
            log.warning("ending the processes of kernel %s failed", kernel_id, exc_info=True)

    async def end_all(self) -> None:
        """Shut down every kernel still known, then end anything of this instance's tag
        and remove its dirs: a server stop leaves no process behind."""
        await asyncio.gather(*(self.shutdown(h) for h in list(self.handles.values())))
        await asyncio.gather(*(self.shutdown_id(kid) for kid in list(self.places)))
        prefix = reaper.make_tag(self.key, self.instance, "")
        await asyncio.to_thread(reaper.reap, lambda tag: tag.startswith(prefix))
        await asyncio.to_thread(shutil.rmtree, self.base, True)


def _reap_place(place: KernelPlace, pgid: int | None) -> None:
    start = time.monotonic()
    ended = reaper.reap(
        lambda tag: tag == place.tag, pgids=[pgid] if pgid else [], grace_s=_REAP_GRACE_S
    )
    shutil.rmtree(place.kernel_dir, ignore_errors=True)
    log.debug(
        "kernel %s: %d leftover process(es) ended in %.3f s",
        place.kernel_id,
        len(ended),
        time.monotonic() - start,
    )
