"""The handle the driver executes a run's cells through (one agent kernel, async client).

The kernel manager is received as an object (jupyter_server's ``AsyncMappingKernelManager``
or jupyter_client's ``AsyncMultiKernelManager``: ``start_kernel(kernel_name=, env=)``,
``get_kernel(id)``, ``shutdown_kernel(id, now=)``, ``interrupt_kernel(id)``,
``restart_kernel(id, now=)``, ``is_alive(id)``); this module never imports jupyter_server.
Kernel clients must be async (``AsyncKernelClient``, what both managers give). With
jupyter_server's ``GatewayMappingKernelManager`` (``--gateway-url``) the handle is given a
:class:`~jupyter_agent.runtime.kernels.remote.RemoteKernels` and talks to the kernel through
its ``channels(kernel_id)`` client instead of the manager's (the server's
``gateway_channels`` module says why).

Protocol with the kernel (see :mod:`jupyter_agent.kernel.kernel`): a cell is an
execute_request whose ``metadata["jupyter_agent"]`` is ``{"op": "cell", "cell_id": ...}``;
the reply content's ``"jupyter_agent"`` key holds ``CellResult.to_json()``. Bash and chdir
are silent executes with ops ``bash`` / ``chdir``. While a cell runs, the handle serves the
stdin channel: each ``input_request`` prompt is a JSON app call or batch, performed by the
run's :class:`~jupyter_agent.runtime.kernels.app_calls.AppHost` and answered with
``input_reply`` (:mod:`jupyter_agent.runtime.kernels.app_calls`).

Live output: while a cell (or a bash op) runs, the handle also reads the iopub channel.
Each output of the request (stream, display, result, error; see
:func:`~jupyter_agent.runtime.kernels.live_output.output_from_iopub`) is kept in
:attr:`AgentKernelHandle.collected` (bounded) and given to the ``on_output`` callback, if
any, as it arrives. The returned result is exactly the kernel's (the callback and the
collector never change it), except for a cell the kernel had to be restarted for: its
timeout result then keeps the outputs collected before the restart.

All the kernel sends (results, live outputs, app requests, op errors) passes
:attr:`AgentKernelHandle.scrubber` first (:mod:`jupyter_agent.runtime.secrets`).

Failures: a kernel that dies mid-cell raises :class:`~jupyter_agent.exceptions.KernelDied`
within about one liveness interval; a cell past ``timeout_s`` is interrupted, and if still
busy after a short grace the kernel is restarted (the run's namespace is lost; the error
result's evalue says so); either way the cell result has ``error.ename == "CellTimeout"``
(:mod:`jupyter_agent.runtime.kernels.cell_results`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from queue import Empty
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_agent.core.digest.cells import BashResult, CellResult
from jupyter_agent.exceptions import KernelDied, KernelError
from jupyter_agent.runtime.kernels.app_calls import AppHost, answer
from jupyter_agent.runtime.kernels.cell_results import from_reply, timeout_result
from jupyter_agent.runtime.kernels.live_output import OutputCollector, output_from_iopub
from jupyter_agent.runtime.kernels.remote import RemoteKernels
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber

__all__ = ["AgentKernelHandle", "AppHost", "OutputSink"]

OutputSink = Callable[[dict[str, Any]], None]
"""Receives each nbformat output of the running cell as the kernel sends it."""

log = logging.getLogger(__name__)

_WARMUP_TIMEOUT_S = 10.0
_READY_TIMEOUT_S = 60.0
# Long enough for a kernel flooding its output to take the interrupt and reply on a loaded
# machine (2 s was not in CI): a restart loses the run's whole namespace.
_INTERRUPT_GRACE_S = 5.0
_OP_GRACE_S = 10.0


class AgentKernelHandle:
    """One run's agent kernel: execute cells, bash, chdir; detect death and hangs."""

    def __init__(
        self,
        kernel_manager: Any,
        kernel_id: str,
        *,
        liveness_interval_s: float = 0.5,
        remote: RemoteKernels | None = None,
    ) -> None:
        self.kernel_id = kernel_id
        self._km = kernel_manager
        self._remote = remote
        self.remote = remote is not None
        """True for a kernel on a gateway (``--gateway-url``): no local process here."""
        self._interval = liveness_interval_s
        self._client: Any = None
        self._cwd: str | None = None
        self._died = False
        self._lock = asyncio.Lock()
        self.stdin_round_trips = 0
        """How many kernel-to-host requests this handle answered (a batch counts once)."""
        self.collected: OutputCollector | None = None
        """The outputs of the latest cell or bash op, as far as they came (bounded)."""
        self.scrubber: Scrubber = NO_SECRETS
        """Cleans all the kernel sends (set by whoever lends the handle to a run)."""
        self._holds = 0  # open hold()s: the running op's timeout is not counting
        self._held_since = 0.0
        self._held_s = 0.0  # how long the running op's holds lasted (closed ones)

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """While it is open, the running cell's (or command's) timeout stops counting: a
        call of the cell waits for the person (an MCP tool's approval), whose answer time
        is not the cell's. Nested and concurrent holds count once."""
        if self._holds == 0:
            self._held_since = time.monotonic()
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if self._holds == 0:
                self._held_s += time.monotonic() - self._held_since

    # -- connection -------------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the shell and stdin channels, wait until the kernel answers and warm its
        cell path up."""
        km = self._km.get_kernel(self.kernel_id)
        with contextlib.suppress(Exception):  # jupyter_server's auto-restart: the run is gone
            km.add_restart_callback(self._on_restart, "restart")
            km.add_restart_callback(self._on_restart, "dead")
        self._client = await self._open_client(km)
        await self._wait_ready()
        # The first agent cell of a fresh kernel is ~40 ms slower than the next: pay it
        # here, while the kernel waits in the pool (no count, history or values left).
        # Only a speed-up: a kernel that cannot (an older kernel package) still starts.
        try:
            await self._op("pass", {"op": "warmup"}, _WARMUP_TIMEOUT_S)
        except KernelDied:
            raise
        except KernelError:
            log.debug("kernel %s: no warm-up", self.kernel_id, exc_info=True)

    async def _open_client(self, km: Any) -> Any:
        """A started client: the manager's own, or for a gateway kernel the websocket one
        the gateway gives (:class:`~jupyter_agent.runtime.kernels.remote.RemoteKernels`)."""
        remote = self._remote
        client = remote.channels(self.kernel_id) if remote is not None else km.client()
        await ensure_async(
            client.start_channels(shell=True, iopub=True, stdin=True, hb=False, control=False)
        )
        return client

    def _on_restart(self) -> None:
        self._died = True

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            msg_id = self._client.kernel_info()
            tries_until = time.monotonic() + 1.0
            while time.monotonic() < tries_until:
                try:
                    msg = await self._client.get_shell_msg(timeout=self._interval)
                except Empty:
                    if not await self.is_alive():
                        raise KernelDied(f"kernel {self.kernel_id} died while starting") from None
                    continue
                if msg["parent_header"].get("msg_id") == msg_id:
                    agent = msg.get("content", {}).get("jupyter_agent")
                    # Only at first start: after a restart, _cwd is where the run was moved
                    # to, and the restart restores it.
                    if self._cwd is None and isinstance(agent, dict):
                        cwd = agent.get("cwd")
                        self._cwd = cwd if isinstance(cwd, str) else None
                    if await self._iopub_saw(msg_id):
                        return
                    break  # iopub not subscribed yet (ZMQ's slow joiner): ask again
            if time.monotonic() > deadline:
                raise KernelError(f"kernel {self.kernel_id} did not answer in time")

    async def close(self) -> None:
        """Close this handle's channels (the kernel itself is left running)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
            self._client = None

    async def is_alive(self) -> bool:
        """False once the kernel process is gone (killed, crashed, culled or auto-restarted)."""
        if self._died:
            return False
        if getattr(self._client, "dead", False):  # a gateway kernel's socket says so
            self._died = True
            return False
        try:
            alive = bool(await ensure_async(self._km.is_alive(self.kernel_id)))
            if alive and self.remote:
                # The gateway's manager answers True once more after the gateway lost the
                # kernel (404): its refreshed model is None then.
                alive = getattr(self._km.get_kernel(self.kernel_id), "kernel", None) is not None
        except KeyError:  # no longer managed (culled or shut down)
            alive = False
        if not alive:
            self._died = True
        return alive

    # -- operations -------------------------------------------------------------------------
    async def run_cell(
        self,
        cell_id: str,
        code: str,
        *,
        timeout_s: float,
        host: AppHost | None = None,
        parent: int | None = None,
        on_output: OutputSink | None = None,
    ) -> CellResult:
        """Run one named cell; its structured result (error result on timeout).

        ``on_output`` gets each output live (see the module docstring). Raises KernelDied
        when the kernel process is gone.
        """
        async with self._lock:
            start = time.monotonic()
            meta = {"op": "cell", "cell_id": cell_id}
            msg_id = self._send(code, meta, silent=False)
            collector = self.collected = OutputCollector()
            tasks = (
                asyncio.create_task(self._serve_stdin(host, parent)),
                asyncio.create_task(self._serve_iopub(msg_id, collector, on_output)),
            )
            try:
                reply = await self._await_reply(msg_id, timeout_s)
                restarted = False
                timed_out = reply is None
                if reply is None:
                    await self.interrupt()
                    reply = await self._await_reply(msg_id, _INTERRUPT_GRACE_S)
                    if reply is None:
                        await _stop(tasks)  # before the restart closes their channels
                        await self._restart()
                        restarted = True
            finally:
                await _stop(tasks)
            duration = time.monotonic() - start
            if reply is not None and not timed_out:
                return self._cell_result(cell_id, reply, duration)
            base = self._cell_result(cell_id, reply, duration) if reply else None
            return timeout_result(
                cell_id,
                base,
                collector,
                timeout_s=timeout_s,
                restarted=restarted,
                duration=duration,
            )

    def _cell_result(self, cell_id: str, reply: dict[str, Any], duration: float) -> CellResult:
        return from_reply(cell_id, self.scrubber.clean_json(reply["content"]), duration)

    async def run_bash(
        self, command: str, *, timeout_s: float, on_output: OutputSink | None = None
    ) -> BashResult:
        """Run one command line as a child of the kernel; also binds ``sh.last`` there.

        ``on_output`` gets its stdout and stderr live, as stream outputs.
        """
        content = await self._op(
            f"sh.run({command!r}, timeout={timeout_s!r})",
            {"op": "bash", "command": command, "timeout_s": timeout_s},
            timeout_s + _OP_GRACE_S,
            live=True,
            on_output=on_output,
        )
        return BashResult.from_json(self.scrubber.clean_json(content["jupyter_agent"]))

    @property
    def cwd(self) -> str | None:
        """The kernel's working folder when known (reported at start, or set by chdir)."""
        return self._cwd

    async def chdir(self, path: str) -> None:
        """Move the kernel's working directory (before the run's first cell)."""
        await self._op(f"import os; os.chdir({path!r})", {"op": "chdir", "path": path}, 30.0)
        self._cwd = path

    async def interrupt(self) -> None:
        """Interrupt what the kernel is doing (SIGINT or an interrupt_request)."""
        await ensure_async(self._km.interrupt_kernel(self.kernel_id))

    async def _op(
        self,
        code: str,
        meta: dict[str, Any],
        timeout_s: float,
        *,
        live: bool = False,
        on_output: OutputSink | None = None,
    ) -> dict[str, Any]:
        async with self._lock:
            msg_id = self._send(code, meta, silent=True)
            tasks: tuple[asyncio.Task[None], ...] = ()
            if live:
                collector = self.collected = OutputCollector()
                tasks = (asyncio.create_task(self._serve_iopub(msg_id, collector, on_output)),)
            try:
                reply = await self._await_reply(msg_id, timeout_s)
                if reply is None:
                    await self.interrupt()
                    reply = await self._await_reply(msg_id, _INTERRUPT_GRACE_S)
            finally:
                await _stop(tasks)
            if reply is None:
                raise KernelError(f"{meta['op']} did not finish in {timeout_s:g} s")
            content: dict[str, Any] = reply["content"]
            if content.get("status") != "ok" or "jupyter_agent" not in content:
                why = f"{content.get('ename', '')}: {content.get('evalue', '')}"
                raise KernelError(f"{meta['op']} failed: {self.scrubber.clean(why)}")
            return content

    # -- plumbing ---------------------------------------------------------------------------
    def _send(self, code: str, meta: dict[str, Any], *, silent: bool) -> str:
        if self._client is None:
            raise KernelError("the kernel handle is not connected")
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": True,
            "stop_on_error": False,
        }
        msg = self._client.session.msg("execute_request", content, metadata={"jupyter_agent": meta})
        self._client.shell_channel.send(msg)
        msg_id: str = msg["header"]["msg_id"]
        return msg_id

    async def _await_reply(self, msg_id: str, timeout_s: float) -> dict[str, Any] | None:
        """The execute_reply, or None at the timeout; KernelDied when the kernel is gone."""
        deadline = time.monotonic() + timeout_s
        self._held_s = 0.0  # (one op runs at a time: the handle's lock)
        while True:
            remaining = deadline + self._held_s - time.monotonic()
            if self._holds:
                remaining = max(remaining, self._interval)
            if remaining <= 0:
                return None
            try:
                msg: dict[str, Any] = await self._client.get_shell_msg(
                    timeout=min(self._interval, remaining)
                )
            except Empty:
                if not await self.is_alive():
                    raise KernelDied(f"kernel {self.kernel_id} died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
            # a stale reply (of a request given up on earlier): drop it

    async def _iopub_saw(self, msg_id: str, wait_s: float = 0.5) -> bool:
        """True once iopub carries a message of request ``msg_id``.

        A just-connected SUB socket drops what is published before its subscription
        reaches the kernel, so a cell's first output could be lost live; the kernel's
        busy/idle status for our kernel_info proves the subscription is in place.
        """
        until = time.monotonic() + wait_s
        while (left := until - time.monotonic()) > 0:
            try:
                msg = await self._client.get_iopub_msg(timeout=left)
            except Empty:
                return False
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return True
        return False

    async def _restart(self) -> None:
        await self.close()
        await ensure_async(self._km.restart_kernel(self.kernel_id, now=True))
        self._died = False
        self._client = await self._open_client(self._km.get_kernel(self.kernel_id))
        await self._wait_ready()
        # No warm-up here (connect's): this runs under the handle's lock, mid-cell.
        if self._cwd is not None:
            msg_id = self._send("", {"op": "chdir", "path": self._cwd}, silent=True)
            await self._await_reply(msg_id, 30.0)

    async def _serve_iopub(
        self, msg_id: str, collector: OutputCollector, on_output: OutputSink | None
    ) -> None:
        """Collect (and pass on) the outputs of one request until cancelled."""
        client, live = self._client, self.scrubber.live()
        try:
            while True:
                msg = await client.get_iopub_msg()
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue  # another request's (an earlier op, a kernel_info): not ours
                raw = output_from_iopub(str(msg.get("msg_type", "")), msg.get("content") or {})
                for output in live.feed(raw) if raw is not None else ():
                    _pass_on(output, collector, on_output)
        finally:  # what the scrubber held back of a stream's end
            for output in live.close():
                _pass_on(output, collector, on_output)

    async def _serve_stdin(self, host: AppHost | None, parent: int | None) -> None:
        while True:
            msg = await self._client.get_stdin_msg()
            if msg.get("msg_type") != "input_request":
                continue
            self.stdin_round_trips += 1
            prompt = str(msg["content"].get("prompt", ""))
            reply = await answer(prompt, host, parent, self.scrubber)
            self._client.input(json.dumps(reply, default=repr))


def _pass_on(output: dict[str, Any], collector: OutputCollector, sink: OutputSink | None) -> None:
    collector.add(output)
    if sink is not None:
        try:
            sink(output)
        except Exception:  # a display problem must never stop the cell
            log.debug("live output callback failed", exc_info=True)


async def _stop(tasks: tuple[asyncio.Task[None], ...]) -> None:
    """Cancel helper tasks of a request and wait until they are gone."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
