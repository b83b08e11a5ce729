"""The host side of the ``notebook`` app's look at the person's kernel (``toolcaller@v8``):
``notebook.variables``, ``notebook.inspect``, ``notebook.kernel_state``,
``notebook.fetch`` and ``notebook.run``.

Each is one ``app.call`` of the agent's cell, performed here against the kernel attached
to the notebook ``path`` (``None``: the notebook in the person's view), found and reached
through ``services.person_kernels``
(:class:`~jupyter_agent.runtime.notebook.person_kernels.PersonKernels`: only the owner's
own Python kernels). The value is the call's logged result, so a replay answers from the
log and needs neither kernel; the app host scrubs it of known secrets like every result.

- ``variables``, ``inspect``, ``kernel_state``: read-only looks (a silent execute that
  leaves the person's namespace, history and execution count as they were); a busy kernel
  is answered at once.
- ``fetch``: the value is pickled by the person's kernel into the run folder's ``blobs/``
  (content-addressed: ``blobs/<sha256>.pickle``, beside the effect logs), refused past
  ``PersonKernels.fetch_max_bytes`` with the size named; the logged value says what was
  copied ``{name, type, bytes, sha256, blob}``; the bytes travel to the agent's kernel
  beside the reply (:class:`~jupyter_agent.runtime.loop.apphost.WithPayload`), never in
  the log.
- ``run``: changes the person's state, so it waits for the person's approval (a nested
  ``approval.wait`` of kind ``kernel`` showing the code) whatever the approval policy, and
  is refused under ``approval = none`` (which never asks) with a message saying how to
  allow it. A denial, a timeout or a break reaches the model as a refusal; approved, the
  code runs there and its outputs are the value.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from jupyter_agent.core.app_spec import WithPayload
from jupyter_agent.core.loop.approval import Decision, refusal
from jupyter_agent.effects import APPROVAL_WAIT, Effect
from jupyter_agent.exceptions import AgentError, AppCallError, RunCancelled
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.runtime.notebook.safe_paths import notebook_path

if TYPE_CHECKING:
    from jupyter_agent.runtime.loop.apphost import AppDriver
    from jupyter_agent.runtime.notebook.person_kernels import PersonKernel, PersonKernels

__all__ = ["KERNEL_METHODS", "perform_kernel_call"]

#: The ``notebook`` methods this module performs.
KERNEL_METHODS: Final = frozenset({"variables", "inspect", "kernel_state", "fetch", "run"})
_VARIABLES_BUDGET: Final = 6000  # characters of summaries (about 1,500 tokens)
_INSPECT_BUDGET: Final = 4000
_RUN_FALLBACK_S: Final = 600.0  # a run's code deadline when the run has no wall time


def _kernels(driver: AppDriver) -> PersonKernels:
    kernels = getattr(driver.services, "person_kernels", None)
    if kernels is None:
        raise AgentError("the person's kernels are not reachable on this server")
    return kernels  # type: ignore[no-any-return]


def _path(driver: AppDriver, raw: Any) -> str:
    if raw is None:
        view = driver.view if isinstance(driver.view, dict) else {}
        raw = view.get("path")
        if not isinstance(raw, str) or not raw:
            raise AgentError(
                "no notebook is open in the person's view: name one with path=, e.g. "
                "notebook.variables(path='analysis/sales.ipynb')"
            )
    return notebook_path(raw, driver.services.root_dir).path


async def _find(driver: AppDriver, args: dict[str, Any]) -> PersonKernel:
    return await _kernels(driver).find(_path(driver, args.get("path")), owner=driver.owner)


def _name(args: dict[str, Any]) -> str:
    name = args.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise AgentError(f"name must be a variable name, not {name!r}")
    return name


async def _variables(driver: AppDriver, args: dict[str, Any]) -> dict[str, Any]:
    kernel = await _find(driver, args)
    found = await _kernels(driver).look(kernel, "variables", {"budget": _VARIABLES_BUDGET})
    return {"path": kernel.path, "kernel": kernel.name, **found}


async def _inspect(driver: AppDriver, args: dict[str, Any]) -> dict[str, Any]:
    name = _name(args)
    kernel = await _find(driver, args)
    found = await _kernels(driver).look(
        kernel, "inspect_value", {"name": name, "budget": _INSPECT_BUDGET}
    )
    return {"path": kernel.path, **found}


async def _kernel_state(driver: AppDriver, args: dict[str, Any]) -> dict[str, Any]:
    path = _path(driver, args.get("path"))
    try:
        kernel = await _kernels(driver).find(path, owner=driver.owner)
    except AgentError as err:
        return {"path": path, "attached": False, "why": str(err)}
    out: dict[str, Any] = {
        "path": path,
        "attached": True,
        "kernel": kernel.name,
        "language": kernel.language,
        "busy": kernel.execution_state == "busy",
        "execution_state": kernel.execution_state,
    }
    if kernel.execution_state != "busy":
        out.update(await _kernels(driver).look(kernel, "state", {}))
    return out


def _blobs(driver: AppDriver) -> Path:
    folder = Path(driver.log.path).parent / "blobs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _store_blob(tmp: Path, folder: Path) -> tuple[str, bytes]:
    data = tmp.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    os.replace(tmp, folder / f"{digest}.pickle")
    return digest, data


async def _fetch(driver: AppDriver, args: dict[str, Any]) -> Any:
    name = _name(args)
    kernels = _kernels(driver)
    kernel = await _find(driver, args)
    folder = _blobs(driver)
    tmp = folder / f".{new_id('blob')}.part"
    cap = kernels.fetch_max_bytes
    try:
        found = await kernels.look(kernel, "dump", {"name": name, "path": str(tmp), "cap": cap})
        if found.get("bytes") is None:
            raise AgentError(
                f"{name} is over the copy limit of {cap / 1e6:g} MB (pickled): work on a part "
                f"of it (e.g. notebook.run(...) after the person agrees, or ask the person "
                "to save it to a file)"
            )
        digest, data = await asyncio.to_thread(_store_blob, tmp, folder)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    value = {
        "name": name,
        "type": found.get("type"),
        "bytes": len(data),
        "sha256": digest,
        "blob": f"blobs/{digest}.pickle",
        "format": "pickle",
        "path": kernel.path,
    }
    payload = await asyncio.to_thread(lambda: base64.b64encode(data).decode("ascii"))
    return WithPayload(value=value, payload=payload)


def _wait_left(driver: AppDriver) -> float:
    wall = float(driver.config.ceilings.get("max_wall_s") or 0)
    if wall <= 0:
        return _RUN_FALLBACK_S
    # the run's MCP state keeps when it started (the driver makes it at the run's start)
    started = getattr(getattr(driver, "mcp", None), "started", None)
    if not isinstance(started, float):
        return wall
    return max(0.0, round(wall - (time.monotonic() - started), 3))


async def _approve(driver: AppDriver, path: str, code: str, seq: int) -> None:
    data = {
        "approval_id": new_id("approval"),
        "kind": "kernel",
        "code": driver.services.scrubber.scrub(code),
        "summary": f"Run this code in the kernel of {path} (it changes your kernel's state)",
        "timeout_s": _wait_left(driver),
    }
    handle = getattr(getattr(driver, "kernel", None), "current", None)
    hold = getattr(handle, "hold", None)
    # the person's answer time is not the agent cell's: its timeout stops while asked
    with hold() if callable(hold) else contextlib.nullcontext():
        result = await driver.perform_nested(Effect(name=APPROVAL_WAIT, data=data, parent=seq))
    if result.cancelled:
        raise RunCancelled(detail=result.data)
    decision = Decision(approve=False) if result.error else Decision.from_json(result.data)
    if decision.approve:
        return
    if decision.by in ("break", "timeout"):  # the loop's own words for these
        raise AppCallError(refusal(decision))
    raise AppCallError(f"The person denied running that code in the kernel of {path}.")


async def _run(driver: AppDriver, args: dict[str, Any], seq: int) -> dict[str, Any]:
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        raise AgentError("code must be a non-empty string of Python")
    if str(driver.config.ceilings.get("approval") or "none") == "none":
        raise AgentError(
            "notebook.run changes the person's kernel, so it needs their approval, and this "
            "server's approval policy is 'none' (nothing is ever asked): an admin allows it "
            "with c.JupyterAgent.approval = 'writes' or 'every_cell'; until then use "
            "notebook.fetch(name) and work on a copy"
        )
    kernel = await _find(driver, args)
    await _approve(driver, kernel.path, code, seq)
    kernel = await _find(driver, args)  # its state now, after the person's answer
    if kernel.execution_state == "busy":
        raise AgentError(f"the kernel of {kernel.path} is busy running a cell: not run")
    out = await _kernels(driver).run(kernel, code, timeout_s=max(1.0, _wait_left(driver)))
    return {"path": kernel.path, **out}


async def perform_kernel_call(
    driver: AppDriver, method: str, args: dict[str, Any], *, seq: int
) -> Any:
    """Perform ``notebook.<method>`` (the app call at ``seq``), one of
    :data:`KERNEL_METHODS`."""
    if method == "variables":
        return await _variables(driver, args)
    if method == "inspect":
        return await _inspect(driver, args)
    if method == "kernel_state":
        return await _kernel_state(driver, args)
    if method == "fetch":
        return await _fetch(driver, args)
    if method == "run":
        return await _run(driver, args, seq)
    raise AgentError(f"unknown app method notebook.{method}")
