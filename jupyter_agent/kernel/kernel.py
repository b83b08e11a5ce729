"""AgentKernel: an IPython kernel whose namespace is run_cell's environment.

The agent's client names each cell and asks for special operations through the
execute_request's ``metadata["jupyter_agent"]`` (ipykernel hands the request metadata to
``do_execute`` as ``cell_meta``); the answer travels in the execute_reply content under the
key ``"jupyter_agent"`` (jupyter_client passes unknown reply keys through untouched):

==========================================================  ==================================
request metadata ``jupyter_agent``                           reply content ``jupyter_agent``
==========================================================  ==================================
``{"op": "cell", "cell_id": "c3"}`` (code = the cell)        ``CellResult.to_json()``
``{"op": "bash", "command": CMD, "timeout_s": T}`` (silent)  ``BashResult.to_json()``
``{"op": "chdir", "path": P}`` (silent)                      ``{"cwd": os.getcwd()}``
==========================================================  ==================================

A request without that key is an ordinary notebook cell: it runs exactly as in IPython
(ordinary iopub outputs, ``input()`` works), with ``values``, ``sh``, ``batch`` and the apps
available. An exported notebook's setup cell installs its record (:mod:`.recorded`): then
the apps answer from it, and a recorded agent cell's exact code runs as that named cell.
A named cell additionally has its prints, stderr, displays, last value, error, app calls
and nbformat outputs captured (see :mod:`.capture`); its standard iopub outputs
still flow. In named cells ``input()``/``getpass`` raise :class:`InputNotAvailable`: the
stdin channel carries the app calls (see :mod:`.apps`) instead.

Namespace: ``values`` (:mod:`.values`), ``sh`` (:mod:`.sh`), ``batch`` and one proxy per
app of :data:`jupyter_agent.core.loop.apps.ALL_APPS` (``chat``, ``llm``, ``memory``,
``notebook``; see :mod:`.apps`), ``mcp`` (the MCP servers' tools, :mod:`.mcp_app`) and
``AppCallError``. ``%matplotlib inline`` is the default (ipykernel's),
so ``plt.plot(...)`` shows a PNG display.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import zmq
from ipykernel.displayhook import ZMQShellDisplayHook
from ipykernel.ipkernel import IPythonKernel
from ipykernel.zmqshell import ZMQInteractiveShell
from IPython.core.error import StdinNotImplementedError
from traitlets import Type

from jupyter_agent import __version__
from jupyter_agent.core.digest.cells import AppCallRecord, CellError
from jupyter_agent.exceptions import AppCallError
from jupyter_agent.kernel import capture
from jupyter_agent.kernel.apps import build_apps, make_batch
from jupyter_agent.kernel.capture import CapturingStream, CellCapture
from jupyter_agent.kernel.mcp_app import McpApp
from jupyter_agent.kernel.recorded import RecordedHost
from jupyter_agent.kernel.sh import DEFAULT_TIMEOUT_S, Sh
from jupyter_agent.kernel.values import Values
from jupyter_agent.text import repair_json

__all__ = ["AgentDisplayHook", "AgentKernel", "AgentShell", "InputNotAvailable"]

# how long an app call waits for a just-connected client's stdin socket
_STDIN_CONNECT_S = 10.0
# How often buffered stdout/stderr goes out on iopub (ipykernel's default is 0.2 s): the
# panel shows a running cell's output live, and 50 ms keeps that prompt at 20 messages/s.
_WARMUP = "_warmup"  # the warm-up cell's name: never a model's cell id (c1, c2, ...)
_FLUSH_INTERVAL_S = 0.05


class InputNotAvailable(StdinNotImplementedError):
    """``input()`` in an agent cell: there is no person at a prompt to answer it."""


class AgentDisplayHook(ZMQShellDisplayHook):
    """The displayhook, telling the active capture about the last value and its bundle."""

    def fill_exec_result(self, result: Any) -> None:
        super().fill_exec_result(result)  # type: ignore[no-untyped-call]
        cap = capture.active()
        if cap is not None:
            cap.on_last_object(result)

    def write_format_data(
        self, format_dict: dict[str, Any], md_dict: dict[str, Any] | None = None
    ) -> None:
        super().write_format_data(format_dict, md_dict)  # type: ignore[no-untyped-call]
        cap = capture.active()
        if cap is not None:
            cap.on_execute_result(format_dict, md_dict, self.prompt_count)


class AgentShell(ZMQInteractiveShell):
    """The kernel's shell: IPython's, with the capturing displayhook."""

    displayhook_class = Type(AgentDisplayHook)


class _StdinHost:
    """The :class:`~.apps.HostChannel` of the kernel: one input_request per host call."""

    def __init__(self, kernel: AgentKernel) -> None:
        self._kernel = kernel

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        kernel = self._kernel
        what = (
            "batch"
            if payload.get("jupyter_agent") == "batch"
            else f"{payload.get('app')}.{payload.get('method')}"
        )
        if kernel.recorded is not None and not kernel.hosted_cell_running:
            # an exported notebook re-running: its record answers, no host is asked
            return kernel.recorded.request(payload)
        if not kernel.agent_cell_running or not kernel._allow_stdin:
            raise AppCallError(
                f"{what} needs the agent host: in-cell apps work only in cells run by "
                "jupyter-agent (this cell was run by an ordinary client)"
            )
        text = self._send_and_wait(json.dumps(payload))
        try:
            reply = json.loads(text)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise AppCallError(f"{what}: the host's reply is not a JSON object")
        return reply

    def _send_and_wait(self, prompt: str) -> str:
        """One input_request round trip, retried while the client's stdin isn't connected.

        A ROUTER socket silently drops a message to a peer whose connection is not yet
        established (a client that just connected): with ROUTER_MANDATORY the send fails
        instead, and is retried, so the request is never lost and the cell never hangs.
        """
        kernel = self._kernel
        sock = kernel.stdin_socket
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        try:
            deadline = time.monotonic() + _STDIN_CONNECT_S
            while True:
                try:
                    return _input_request(
                        kernel,
                        prompt,
                        kernel._get_shell_context_var(kernel._shell_parent_ident),
                        kernel.get_parent("shell"),  # type: ignore[no-untyped-call]
                    )
                except zmq.ZMQError as exc:
                    if exc.errno != zmq.EHOSTUNREACH or time.monotonic() > deadline:
                        raise AppCallError(
                            f"the agent host is not reachable over the stdin channel ({exc})"
                        ) from None
                    time.sleep(0.005)
        finally:
            sock.setsockopt(zmq.ROUTER_MANDATORY, 0)

    def record(self, record: AppCallRecord) -> None:
        cap = capture.active()
        if cap is not None:
            cap.app_calls.append(record)

    def next_batch(self) -> int:
        cap = capture.active()
        if cap is None:
            return 1
        cap.batches += 1
        return cap.batches


def _flush_pending(stream: Any) -> None:
    """Flush ``stream`` when it holds output not sent yet. A flush of ipykernel's stream is
    two hand-offs to its IO thread and back even when there is nothing to send (about a
    fifth of an app call's round trip): skipped when its ``_flush_pending`` says nothing
    was written since the last flush (a stream without the flag is flushed)."""
    if stream is not None and getattr(stream, "_flush_pending", True) is not False:
        stream.flush()


def _input_request(kernel: Any, prompt: str, ident: Any, parent: Any) -> str:
    """ipykernel's ``input_request`` round trip (``Kernel._input_request``'s protocol: the
    output so far flushed first, stale replies dropped, one request, the reply awaited with
    a polling ``select`` so an interrupt gets through, an invalid message logged and
    skipped), without its flushes of streams that hold nothing."""
    _flush_pending(sys.stdout)
    _flush_pending(sys.stderr)
    sock = kernel.stdin_socket
    while True:  # a reply left from an earlier, interrupted request is not ours
        try:
            sock.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EAGAIN:
                break
            raise
    kernel.session.send(
        sock, "input_request", {"prompt": prompt, "password": False}, parent, ident=ident
    )
    while True:
        try:
            readable, _, failed = zmq.select([sock], [], [sock], 0.01)
            if readable or failed:
                _, reply = kernel.session.recv(sock)
                if reply is not None:
                    break
        except KeyboardInterrupt:
            raise KeyboardInterrupt("Interrupted by user") from None
        except Exception:  # not a valid reply (a bad signature, ...): wait on, as ipykernel
            kernel.log.warning("Invalid Message:", exc_info=True)
    try:
        value = reply["content"]["value"]
    except (KeyError, TypeError):
        value = ""
    if value == "\x04":  # EOF, as ipykernel answers it
        raise EOFError
    return str(value)


def _repairing_packer(pack: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The session's packer, but a message holding a lone surrogate (a print of
    ``"\ud800"``, half an emoji) is sent with each replaced by U+FFFD instead of failing
    to encode (which would lose the output and the execute_reply holding it)."""

    def packer(obj: Any) -> bytes:
        try:
            return pack(obj)
        except UnicodeEncodeError:
            return pack(repair_json(obj))

    return packer


class AgentKernel(IPythonKernel):
    """The ``jupyter-agent`` kernel (see the module docstring for its protocol)."""

    implementation = "jupyter-agent"
    implementation_version = __version__
    banner = "Python (agent): an IPython kernel for jupyter-agent runs"
    shell_class = Type(AgentShell)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        capture.install_print_hook()
        if self.session is not None:
            self.session.pack = _repairing_packer(self.session.pack)
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "flush_interval"):
                stream.flush_interval = _FLUSH_INTERVAL_S
        self.agent_cell_running = False
        self.hosted_cell_running = False  # an agent cell its jupyter-agent host runs
        self.recorded: RecordedHost | None = None  # an exported notebook's record
        self.values = Values()
        self.sh = Sh()
        host = _StdinHost(self)
        names: dict[str, Any] = {
            "values": self.values,
            "sh": self.sh,
            "batch": make_batch(host),
            "AppCallError": AppCallError,
        }
        names.update(build_apps(host))
        names["mcp"] = McpApp(host)  # always: the host knows which servers a run has
        # interactive=False: hidden from %who, like IPython's own helpers
        assert self.shell is not None
        self.shell.push(names, interactive=False)

    def use_recorded(self, host: RecordedHost) -> None:
        """Answer app calls and name cells from an exported notebook's record (:mod:`.recorded`)."""
        self.recorded = host

    @property
    def kernel_info(self) -> dict[str, Any]:
        """IPython's kernel info plus ``jupyter_agent.cwd``: a pool can skip a needless chdir."""
        info: dict[str, Any] = dict(super().kernel_info)
        info["jupyter_agent"] = {"cwd": os.getcwd()}
        return info

    # -- stdin: model-written input() must not prompt ----------------------------------------
    def raw_input(self, prompt: str = "") -> str:
        if self.agent_cell_running:
            raise InputNotAvailable(
                "input() is not available in agent cells: nobody is at a prompt, and the "
                "stdin channel carries the agent's app calls. Put the value in the code."
            )
        result: str = super().raw_input(prompt)  # type: ignore[no-untyped-call]
        return result

    def getpass(self, prompt: str = "", stream: Any = None, **kwargs: Any) -> str:
        if self.agent_cell_running:
            raise InputNotAvailable("getpass() is not available in agent cells")
        result: str = super().getpass(prompt, stream, **kwargs)
        return result

    # -- execute ------------------------------------------------------------------------------
    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        agent = (cell_meta or {}).get("jupyter_agent")
        op = agent.get("op") if isinstance(agent, dict) else None
        if op == "bash":
            assert isinstance(agent, dict)
            return self._do_bash(str(agent["command"]), agent.get("timeout_s"))
        if op == "chdir":
            assert isinstance(agent, dict)
            return self._do_chdir(str(agent["path"]))
        if op == "warmup":
            return await self._do_warmup()
        if op is None and self.recorded is not None:
            name = self.recorded.cell_name(code)
            if name is not None:  # a recorded agent cell re-run: keep its values by name
                return await self._do_agent_cell(
                    name, code, silent, store_history, allow_stdin, cell_meta, cell_id
                )
        if op != "cell":
            result: dict[str, Any] = await super().do_execute(  # type: ignore[no-untyped-call]
                code,
                silent,
                store_history,
                user_expressions,
                allow_stdin,
                cell_meta=cell_meta,
                cell_id=cell_id,
            )
            return result
        assert isinstance(agent, dict)
        self.hosted_cell_running = True
        try:
            return await self._do_agent_cell(
                str(agent["cell_id"]), code, silent, store_history, allow_stdin, cell_meta, cell_id
            )
        finally:
            self.hosted_cell_running = False

    async def _do_agent_cell(
        self,
        name: str,
        code: str,
        silent: bool,
        store_history: bool,
        allow_stdin: bool,
        cell_meta: dict[str, Any] | None,
        cell_id: str | None,
    ) -> dict[str, Any]:
        cap = CellCapture(name)
        assert self.shell is not None
        display_pub = self.shell.display_pub

        def on_display(msg: dict[str, Any]) -> dict[str, Any]:
            if msg.get("msg_type") == "display_data":
                content = msg.get("content", {})
                cap.on_display(content.get("data", {}), content.get("metadata"))
            return msg

        real_out, real_err = sys.stdout, sys.stderr
        sys.stdout = CapturingStream(real_out, cap, "stdout")
        sys.stderr = CapturingStream(real_err, cap, "stderr")
        display_pub.register_hook(on_display)
        self.agent_cell_running = True
        start = time.perf_counter()
        try:
            with cap:
                reply: dict[str, Any] = await super().do_execute(  # type: ignore[no-untyped-call]
                    code,
                    silent,
                    store_history,
                    None,
                    allow_stdin,
                    cell_meta=cell_meta,
                    cell_id=cell_id,
                )
        finally:
            duration = time.perf_counter() - start
            self.agent_cell_running = False
            display_pub.unregister_hook(on_display)
            sys.stdout, sys.stderr = real_out, real_err
        error = None
        if reply.get("status") == "error":
            error = CellError(
                ename=str(reply.get("ename", "")),
                evalue=str(reply.get("evalue", "")),
                traceback=tuple(reply.get("traceback") or ()),
            )
        cap.execution_count = reply.get("execution_count")
        result = cap.result(error=error, duration_s=duration)
        self.values.store(name, cap.prints, last=cap.last_obj, has_last=cap.has_last)
        reply["jupyter_agent"] = result.to_json()
        return reply

    async def _do_warmup(self) -> dict[str, Any]:
        """Run an empty agent cell through the whole capture path, leaving no trace (no
        execution count, no history, no values): the first agent cell of a fresh kernel
        took ~40 ms more than the next (first use of the display hook, capture, history
        machinery), on the run's path; a pool kernel pays it while it waits instead."""
        reply = await self._do_agent_cell(_WARMUP, "pass", False, False, False, None, None)
        self.values.forget(_WARMUP)
        return self._op_reply({"warm": reply.get("status") == "ok"})

    def _op_reply(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": "ok",
            "execution_count": self.execution_count,
            "user_expressions": {},
            "payload": [],
            "jupyter_agent": payload,
        }

    def _op_error(self, exc: BaseException) -> dict[str, Any]:
        return {
            "status": "error",
            "execution_count": self.execution_count,
            "ename": type(exc).__name__,
            "evalue": str(exc),
            "traceback": [],
            "user_expressions": {},
            "payload": [],
        }

    def _do_bash(self, command: str, timeout_s: Any) -> dict[str, Any]:
        timeout = float(timeout_s) if timeout_s is not None else DEFAULT_TIMEOUT_S
        parent = self.get_parent("shell")  # type: ignore[no-untyped-call]

        def on_output(name: str, text: str) -> None:
            # Called from the command's reader threads: parent the stream messages to this
            # request there (ipykernel's streams keep the parent per thread), so the host
            # shows them live as the bash cell's output.
            stream = sys.stdout if name == "stdout" else sys.stderr
            set_parent = getattr(stream, "set_thread_parent", None)
            if set_parent is not None:
                set_parent(parent)
            stream.write(text)

        try:
            result = self.sh.run(command, timeout=timeout, on_output=on_output)
        except (KeyboardInterrupt, OSError) as exc:
            return self._op_error(exc)
        return self._op_reply(result.to_bash_result().to_json())

    def _do_chdir(self, path: str) -> dict[str, Any]:
        try:
            os.chdir(path)
        except OSError as exc:
            return self._op_error(exc)
        return self._op_reply({"cwd": os.getcwd()})
