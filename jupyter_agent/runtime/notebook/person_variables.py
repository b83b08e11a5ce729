"""The variables of a person's notebook kernel, for the panel: ``GET agent/variables``.

:class:`PersonVariables` answers what the composer's ``@`` mentions (and anything else in
the panel that names the person's data) list: the variables of the kernel attached to a
notebook, as the agent's ``notebook.variables()`` sees them (:mod:`.person_kernels`: one
silent look, nothing changes in the person's kernel), summarised (``DataFrame 1,000 x 12
(a: int64, ...)``).

Contracts: typed arguments, the one error tree. A notebook path outside the root is
``PathRefused``; no kernel attached, another owner's, a non-Python one, or a gateway:
``NotFound`` ``no_kernel`` with the reason; a kernel running a cell: ``Conflict``
``kernel_busy`` at once (never queued behind the person's cell); no person's kernels on
this server: ``NotSupported``. Answers are kept ``ttl_s`` seconds per kernel (a popup
asks as the person types), and never outlive a cell the person runs after them longer
than that.
"""

from __future__ import annotations

import time
from typing import Any, Final

from jupyter_agent.exceptions import AgentError, Conflict, NotFound, NotSupported
from jupyter_agent.runtime.notebook.person_kernels import KernelBusy, PersonKernels
from jupyter_agent.runtime.notebook.safe_paths import notebook_path

__all__ = ["PersonVariables"]

#: What one answer's summaries may hold, in characters (as ``notebook.variables``).
_BUDGET: Final = 6000
_KEPT: Final = 64


class PersonVariables:
    """The person's kernel variables by notebook (see the module docstring)."""

    def __init__(self, kernels: PersonKernels | None, *, root_dir: str, ttl_s: float = 2.0) -> None:
        self._kernels = kernels
        self._root_dir = root_dir
        self._ttl_s = ttl_s
        self._kept: dict[str, tuple[float, dict[str, Any]]] = {}

    async def variables(self, path: str, *, owner: str) -> dict[str, Any]:
        """``{path, kernel, variables: [{name, type, summary}], total, cut, more}`` of the
        kernel attached to the notebook ``path`` (see the module docstring)."""
        if self._kernels is None:
            raise NotSupported("the person's kernels are not reachable on this server")
        where = notebook_path(path, self._root_dir).path
        try:
            kernel = await self._kernels.find(where, owner=owner)
        except AgentError as err:
            raise NotFound(str(err), reason="no_kernel") from None
        now = time.monotonic()
        kept = self._kept.get(kernel.kernel_id)
        if kept is not None and now - kept[0] < self._ttl_s:
            return kept[1]
        try:
            found = await self._kernels.look(kernel, "variables", {"budget": _BUDGET})
        except KernelBusy as err:
            raise Conflict(str(err), reason="kernel_busy") from None
        except AgentError as err:
            raise NotFound(str(err), reason="no_kernel") from None
        answer = {"path": where, "kernel": kernel.name, **found}
        self._kept[kernel.kernel_id] = (now, answer)
        while len(self._kept) > _KEPT:
            self._kept.pop(next(iter(self._kept)))
        return answer
