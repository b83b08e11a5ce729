"""The person's kernels as the agent may reach them: found by notebook path, owned,
Python only, looked at without a trace, run in only when asked.

:class:`PersonKernels` is built once by the server (``services.person_kernels``) over the
server's own kernel manager, session manager and kernelspecs (never the agent's kernel
manager: those kernels are the agent's). Contracts:

- :meth:`PersonKernels.find`: the kernel of the session whose path is the notebook's
  (the newest when several): ``AgentError`` naming the notebook when none is attached,
  when its kernel is not the caller's (:class:`KernelOwners`: with several owners on one
  server only a kernel or session the owner's own request started counts; with one
  owner, every kernel is theirs), when it is not a Python kernel (its kernelspec's
  language), or when the server's kernels are on a gateway (not supported: said so).
- :meth:`PersonKernels.look`: one silent execute (``silent=True, store_history=False``,
  no code, one ``user_expressions`` entry: :func:`jupyter_agent.kernel.look.expression`)
  on a client of its own (the person's frontend never sees a reply), answered within
  ``timeout_s``; a kernel the server sees ``busy`` is answered at once, never queued
  behind the person's cell: ``KernelBusy``. Nothing in the person's namespace, history
  or execution count changes.
- :meth:`PersonKernels.run`: the code executed as a cell would be (history kept), its
  outputs collected from iopub (texts; images as placeholders), bounded; cancelled (a hard
  break): the kernel is interrupted, since the code running there is the agent's.

Every method runs on the event loop and awaits the kernel (jupyter_client's async client):
nothing blocks the server.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from jupyter_client.session import Session

from jupyter_agent.exceptions import AgentError
from jupyter_agent.kernel import look

__all__ = ["KernelBusy", "KernelOwners", "PersonKernel", "PersonKernels"]

#: How many sessions and kernels :class:`KernelOwners` remembers (oldest forgotten first).
_KEPT: Final = 4096
_OUTPUT_CHARS: Final = 20_000
_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SOURCE: Final = inspect.getsource(look)


class KernelBusy(AgentError):
    """The person's kernel is running a cell: a look is answered at once, not queued."""


class KernelOwners:
    """Who started which of the server's sessions and kernels (several owners only):
    fed by the server's request log (``POST /api/sessions``, ``POST /api/kernels``)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, str] = OrderedDict()
        self._kernels: OrderedDict[str, str] = OrderedDict()

    def saw(self, kind: str, object_id: str, owner: str) -> None:
        """``owner``'s request created the session or kernel ``object_id``."""
        table = self._sessions if kind == "session" else self._kernels
        table[object_id] = owner
        table.move_to_end(object_id)
        while len(table) > _KEPT:
            table.popitem(last=False)

    def owns(self, owner: str, *, session_id: str, kernel_id: str) -> bool:
        """Whether the session or its kernel was started by ``owner``."""
        return owner in (self._sessions.get(session_id), self._kernels.get(kernel_id))


@dataclass(frozen=True, kw_only=True)
class PersonKernel:
    """The kernel attached to a notebook: what :meth:`PersonKernels.find` found."""

    path: str
    kernel_id: str
    session_id: str
    name: str
    language: str
    #: ``idle``, ``busy``, ``starting``, ... as the server last saw it.
    execution_state: str
    #: Seconds since the server last saw the kernel busy or idle.
    idle_s: float


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _output_text(msg_type: str, content: dict[str, Any]) -> str:
    if msg_type == "stream":
        return _text(content.get("text"))
    if msg_type == "error":
        trace = "\n".join(_ANSI.sub("", str(line)) for line in content.get("traceback") or [])
        return trace or f"{content.get('ename')}: {content.get('evalue')}"
    data = content.get("data") or {}
    if "text/plain" in data:
        return _text(data["text/plain"]) + "\n"
    kinds = ", ".join(sorted(data))
    return f"<{kinds}>\n" if kinds else ""


async def _iopub_ready(client: Any, tries: int = 20) -> None:
    """Wait until the new client's iopub subscription receives (ZMQ subscribes
    asynchronously: a cell's first outputs could be lost): a ``kernel_info`` request's
    status message proves it."""
    for _ in range(tries):
        msg_id = client.kernel_info()
        deadline = time.monotonic() + 0.25
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await client.get_iopub_msg(timeout=left)
            except Exception:  # queue.Empty: ask again
                break
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                return
    raise AgentError("the person's kernel did not answer on its output channel")


class PersonKernels:
    """The person's kernels (see the module docstring)."""

    def __init__(
        self,
        *,
        kernel_manager: Any,
        session_manager: Any,
        kernel_specs: Any,
        owners: KernelOwners | None,
        gateway: bool = False,
        timeout_s: float = 10.0,
        fetch_max_bytes: int = 100_000_000,
    ) -> None:
        self._km = kernel_manager
        self._sessions = session_manager
        self._specs = kernel_specs
        #: The server's kernelspecs (``KernelPool.python = auto`` reads the viewed kernel's).
        self.kernel_specs = kernel_specs
        self.owners = owners
        self._gateway = gateway
        self.timeout_s = timeout_s
        #: ``notebook.fetch``'s cap on a copied value's pickled size.
        self.fetch_max_bytes = fetch_max_bytes
        self._languages: dict[str, str] = {}

    async def _language(self, name: str) -> str:
        if name not in self._languages:
            spec = await asyncio.to_thread(self._specs.get_kernel_spec, name)
            self._languages[name] = str(getattr(spec, "language", "") or "")
        return self._languages[name]

    async def find(self, path: str, *, owner: str) -> PersonKernel:
        """The kernel attached to the notebook ``path`` (see the module docstring)."""
        if self._gateway:
            raise AgentError(
                "the person's kernels run on a kernel gateway: looking at them is not "
                "supported there yet"
            )
        sessions = await self._sessions.list_sessions()
        mine = [s for s in sessions if str(s.get("path") or "").lstrip("/") == path]
        if not mine:
            raise AgentError(
                f"no kernel is attached to {path}: the person has not opened it with a "
                "kernel (or its kernel was shut down)"
            )
        session = mine[-1]
        kernel = session.get("kernel") or {}
        kernel_id, session_id = str(kernel.get("id") or ""), str(session.get("id") or "")
        if self.owners is not None and not self.owners.owns(
            owner, session_id=session_id, kernel_id=kernel_id
        ):
            raise AgentError(
                f"the kernel of {path} is not yours: the agent looks only at kernels its "
                "owner started"
            )
        name = str(kernel.get("name") or "")
        language = await self._language(name)
        if language.lower() != "python":
            raise AgentError(
                f"the kernel of {path} is a {language or 'non-Python'} kernel ({name}): the "
                "agent can look at Python kernels only"
            )
        km = self._km.get_kernel(kernel_id)
        last = getattr(km, "last_activity", None)
        idle_s = 0.0
        if last is not None:
            idle_s = max(0.0, time.time() - last.timestamp())
        return PersonKernel(
            path=path,
            kernel_id=kernel_id,
            session_id=session_id,
            name=name,
            language=language,
            execution_state=str(getattr(km, "execution_state", "") or "unknown"),
            idle_s=round(idle_s, 1),
        )

    def _client(self, kernel: PersonKernel, *, iopub: bool) -> Any:
        km = self._km.get_kernel(kernel.kernel_id)
        # A session of its own: its shell socket's identity is the session id, and one
        # shared with another client of the kernel would take that client's replies.
        own = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        client = km.client(session=own)
        client.start_channels(shell=True, iopub=iopub, stdin=False, hb=False, control=False)
        return client

    async def look(self, kernel: PersonKernel, fn: str, args: dict[str, Any]) -> Any:
        """``fn(ns, **args)`` of :mod:`jupyter_agent.kernel.look` in the person's kernel,
        its JSON value; ``KernelBusy`` at once for a busy kernel; ``AgentError`` for a
        late answer or the function's own error."""
        if kernel.execution_state == "busy":
            raise KernelBusy(
                f"the kernel of {kernel.path} is busy running a cell (for "
                f"{kernel.idle_s:g} s): ask again when it is idle"
            )
        expression = look.expression(_SOURCE, fn, args)
        client = self._client(kernel, iopub=False)
        try:
            reply = await client.execute(
                "",
                silent=True,
                store_history=False,
                user_expressions={"look": expression},
                allow_stdin=False,
                reply=True,
                timeout=self.timeout_s,
            )
        except TimeoutError:
            raise AgentError(
                f"the kernel of {kernel.path} did not answer within {self.timeout_s:g} s"
            ) from None
        finally:
            client.stop_channels()
        answer = (reply.get("content") or {}).get("user_expressions", {}).get("look") or {}
        if answer.get("status") != "ok":
            raise AgentError(f"the look failed in the kernel: {answer.get('evalue') or answer}")
        text = (answer.get("data") or {}).get("text/plain", "")
        try:
            out = json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError):
            raise AgentError("the kernel's answer could not be read") from None
        if "error" in out:
            raise AgentError(str(out["error"]))
        return out.get("ok")

    async def run(self, kernel: PersonKernel, code: str, *, timeout_s: float) -> dict[str, Any]:
        """Execute ``code`` in the person's kernel; ``{status, execution_count, output,
        cut}`` (see the module docstring)."""
        client = self._client(kernel, iopub=True)
        texts: list[str] = []
        status, count = "ok", None
        try:
            await _iopub_ready(client)
            msg_id = client.execute(code, silent=False, store_history=True, allow_stdin=False)
            deadline = time.monotonic() + timeout_s
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError(
                        f"the code did not finish within {timeout_s:g} s in the kernel of "
                        f"{kernel.path} (it was interrupted)"
                    )
                try:
                    msg = await client.get_iopub_msg(timeout=min(left, 1.0))
                except Exception:  # queue.Empty: poll again until the deadline
                    continue
                if (msg.get("parent_header") or {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg.get("content") or {}
                if kind == "status" and content.get("execution_state") == "idle":
                    break
                if kind == "execute_input":
                    count = content.get("execution_count")
                elif kind == "error":
                    status = "error"
                if kind in ("stream", "execute_result", "display_data", "error"):
                    texts.append(_output_text(kind, content))
        except (asyncio.CancelledError, AgentError):
            # The code is the agent's: a hard break (or the deadline) stops it there too.
            await self._interrupt(kernel)
            raise
        finally:
            client.stop_channels()
        output = "".join(texts)
        cut = len(output) > _OUTPUT_CHARS
        return {
            "status": status,
            "execution_count": count,
            "output": output[:_OUTPUT_CHARS],
            "cut": cut,
        }

    async def _interrupt(self, kernel: PersonKernel) -> None:
        with contextlib.suppress(Exception):  # already gone: nothing to stop
            await self._km.interrupt_kernel(kernel.kernel_id)
