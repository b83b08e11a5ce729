"""The kernel's requests to the host while a cell runs: in-cell app calls over stdin.

An agent cell's in-cell apps (see :mod:`jupyter_agent.kernel.apps`) send each call, or a
batch of them, as the prompt of an ``input_request``: JSON with a ``"jupyter_agent"`` key.
:func:`answer` turns one prompt into the ``input_reply`` value: the run's :class:`AppHost`
performs each call (a batch's items concurrently); anything else gets an error object, so
nothing ever waits on a prompt. A host that fails gives the cell an error for that call
(an ``AppCallError`` in the kernel), never a stuck cell. Used by
:class:`~jupyter_agent.runtime.kernels.handle.AgentKernelHandle`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from jupyter_agent.runtime.secrets import Scrubber

__all__ = ["AppHost", "answer"]


class AppHost(Protocol):
    """Performs in-cell app calls for a run (the driver: logs each as an ``app.call``)."""

    async def call(
        self, app: str, method: str, args: dict[str, Any], *, parent: int | None
    ) -> dict[str, Any]:
        """``{"ok", "value", "error", "seq", "mutation"}`` for one call."""
        ...


async def answer(prompt: str, host: AppHost | None, parent: int | None, scrubber: Scrubber) -> Any:
    """The reply to one ``input_request`` prompt: a call's result, ``{"results": [...]}``
    for a batch, or an error object for a prompt that is not a jupyter-agent call. The
    request passes ``scrubber`` before the host sees it."""
    try:
        request = scrubber.clean_json(json.loads(prompt))
    except ValueError:
        request = None
    if not isinstance(request, dict) or "jupyter_agent" not in request:
        return {"ok": False, "error": "this kernel's stdin answers jupyter-agent calls only"}
    if request["jupyter_agent"] == "batch":
        items = request.get("items") or []
        results = await asyncio.gather(*(_call(host, it, parent) for it in items))
        return {"results": list(results)}
    return await _call(host, request, parent)


async def _call(host: AppHost | None, item: Any, parent: int | None) -> dict[str, Any]:
    if host is None:
        return {"ok": False, "error": "no app host is attached to this run", "seq": None}
    try:
        app, method = str(item["app"]), str(item["method"])
        args = dict(item.get("args") or {})
        return dict(await host.call(app, method, args, parent=parent))
    except Exception as exc:  # the host failed: the cell gets an AppCallError
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "seq": None}
