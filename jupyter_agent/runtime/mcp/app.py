"""The host side of the in-cell ``mcp`` app: ``mcp.<server>.<tool>(**args)``.

The kernel sends ``app.call {app: "mcp", method: "<server>.<tool>", args}``;
:func:`~jupyter_agent.runtime.loop.apphost.perform_app_call` routes it here before its static
app table (the ``mcp`` app's methods are the configured servers' tools).
:func:`perform_mcp_call` finds the tool in the run's recorded catalogue (the
``config.get {key: "mcp"}`` answer the program asked for: :class:`McpRunState`), falling
back to the hub's current one, and calls it through ``services.mcp``
(:class:`~jupyter_agent.runtime.mcp.hub.McpHub`). The reply's ``mutation`` is the tool's
``mutating`` (mutating when either catalogue says so).

Approvals: under ``ceilings.approval`` ``writes`` or ``every_cell`` a mutating tool waits
for the person first: a nested ``approval.wait`` (parent: the ``app.call``'s seq) ``{approval_id,
kind: "mcp", code: "mcp.files.write_file(path='x')", summary, timeout_s}``, performed by
:func:`~jupyter_agent.runtime.runs.approvals.perform_wait`. It does not wait under ``none``,
nor in a cell the person approved (the driver saw that cell's ``approval.wait`` answer
``approve: true``), nor once the person approved "the rest of this turn" in this run.
The cell's timeout stops counting while the person is asked
(:meth:`~jupyter_agent.runtime.kernels.handle.AgentKernelHandle.hold`). Denied:
:class:`~jupyter_agent.exceptions.AppCallError` "The person denied
mcp.files.write_file."; a break: "Not run: the person asked you to stop."
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from jupyter_agent.core.loop.approval import BREAK_REFUSAL, TIMEOUT_REFUSAL, Decision
from jupyter_agent.core.mcp.catalogue import MCP_APP, McpCatalogue, McpTool
from jupyter_agent.effects import APPROVAL_WAIT, Effect
from jupyter_agent.exceptions import AppCallError, RunCancelled
from jupyter_agent.runtime.ids import new_id

if TYPE_CHECKING:
    from jupyter_agent.runtime.loop.apphost import AppCall, AppDriver

__all__ = [
    "MCP_IN_CELL",
    "McpRunState",
    "mcp_answer",
    "mcp_current",
    "mcp_mutating",
    "perform_mcp_call",
]

_CODE_ARG_MAX: Final = 200  # the length of one argument's repr in the approval's code
_WAIT_FALLBACK_S: Final = 600.0  # an approval wait's timeout when the run has no wall time


async def mcp_answer(hub: Any) -> dict[str, Any]:
    """``config.get {key: "mcp"}``: the hub's catalogue JSON (``{"servers": []}`` without one)."""
    if hub is None:
        return {"servers": []}
    catalogue: McpCatalogue = await hub.catalogue()
    return catalogue.to_json()


async def mcp_current(hub: Any) -> McpCatalogue:
    """The catalogue a ``toolcaller@v7`` start answer holds: the hub's cached one
    (:meth:`~jupyter_agent.runtime.mcp.hub.McpHub.current`: never a re-list on a turn's
    path but the very first); none without a hub."""
    if hub is None:
        return McpCatalogue()
    catalogue: McpCatalogue = await hub.current()
    return catalogue


@dataclass(kw_only=True)
class McpRunState:
    """What one run's driver keeps for its MCP calls: the catalogue it recorded and what
    the person approved so far (see the module docstring)."""

    #: The ``config.get mcp`` answer of this run (None: the program did not ask).
    catalogue: McpCatalogue | None = None
    #: The seqs of the cells the person approved.
    approved_cells: set[int] = field(default_factory=set)
    #: The person approved the rest of this turn.
    rest: bool = False
    started: float = field(default_factory=time.monotonic)
    _approved_next: bool = False

    def saw_wait(self, data: dict[str, Any], answer: Any) -> None:
        """An ``approval.wait`` of the loop was answered: a cell approved now runs next."""
        decision = Decision.from_json(answer)
        self._approved_next = decision.approve and data.get("kind") == "cell"
        if decision.approve and decision.rest:
            self.rest = True

    def tool_started(self, seq: int, *, cell: bool) -> None:
        """A cell (or command) starts at ``seq``: it is approved when the wait just before
        it approved it."""
        if cell and self._approved_next:
            self.approved_cells.add(seq)
        self._approved_next = False

    def find(self, hub: Any, method: str) -> McpTool | None:
        """The tool of ``method`` in the recorded catalogue, else in the hub's cached one."""
        found = self.known(hub, method)
        return found[0] if found else None

    def known(self, hub: Any, method: str) -> list[McpTool]:
        """``method``'s tool as the recorded catalogue and the hub's cached one list it (a
        server may change a tool's annotations between the two: both count)."""
        tools: list[McpTool] = []
        for catalogue in (self.catalogue, getattr(hub, "cached", None)):
            found = catalogue.find(method) if isinstance(catalogue, McpCatalogue) else None
            if found is not None:
                tools.append(found[1])
        return tools


def _state(driver: AppDriver) -> McpRunState:
    state = getattr(driver, "mcp", None)
    if not isinstance(state, McpRunState):  # a driver-like object of a test
        state = McpRunState()
        driver.mcp = state
    return state


def mcp_mutating(driver: AppDriver, method: str) -> bool:
    """Whether ``method``'s tool is mutating (an unknown tool counts as mutating)."""
    tools = _state(driver).known(driver.services.mcp, method)
    return not tools or any(t.mutating for t in tools)


def _code(method: str, args: dict[str, Any]) -> str:
    parts = []
    for name, value in args.items():
        text = repr(value)
        if len(text) > _CODE_ARG_MAX:
            text = text[: _CODE_ARG_MAX - 3] + "..."
        parts.append(f"{name}={text}")
    return f"{MCP_APP}.{method}({', '.join(parts)})"


def _needs_wait(driver: AppDriver, state: McpRunState, cell_seq: int | None) -> bool:
    policy = str(driver.config.ceilings.get("approval") or "none")
    if policy not in ("writes", "every_cell") or state.rest:
        return False
    return cell_seq is None or cell_seq not in state.approved_cells


def _wait_left(driver: AppDriver, state: McpRunState) -> float:
    wall = float(driver.config.ceilings.get("max_wall_s") or 0)
    if wall <= 0:
        return _WAIT_FALLBACK_S
    return max(0.0, round(wall - (time.monotonic() - state.started), 3))


async def _approve(
    driver: AppDriver, state: McpRunState, method: str, args: dict[str, Any], seq: int
) -> None:
    """Wait for the person (a nested ``approval.wait``); AppCallError when not approved."""
    code = driver.services.scrubber.scrub(_code(method, args))
    data = {
        "approval_id": new_id("approval"),
        "kind": "mcp",
        "code": code,
        "summary": f"Call the MCP tool {MCP_APP}.{method}",
        "timeout_s": _wait_left(driver, state),
    }
    handle = getattr(getattr(driver, "kernel", None), "current", None)
    hold = getattr(handle, "hold", None)
    # the person's answer time is not the cell's: its timeout stops while they are asked
    with hold() if callable(hold) else contextlib.nullcontext():
        result = await driver.perform_nested(Effect(name=APPROVAL_WAIT, data=data, parent=seq))
    if result.cancelled:
        raise RunCancelled(detail=result.data)
    decision = Decision(approve=False) if result.error else Decision.from_json(result.data)
    if decision.approve:
        if decision.rest:
            state.rest = True
        return
    if decision.by == "break":
        raise AppCallError(BREAK_REFUSAL)
    if decision.by == "timeout":
        raise AppCallError(TIMEOUT_REFUSAL)
    raise AppCallError(f"The person denied {MCP_APP}.{method}.")


async def perform_mcp_call(
    driver: AppDriver, method: str, args: dict[str, Any], seq: int, *, cell_seq: int | None = None
) -> dict[str, Any]:
    """Perform ``mcp.<method>(**args)`` for the cell at ``cell_seq`` (the ``app.call`` is at
    ``seq``); the reply value (:mod:`.results`), or an AgentError whose message the
    cell's AppCallError shows."""
    hub = driver.services.mcp
    if hub is None:
        raise AppCallError(f"{MCP_APP}.{method}: no MCP servers are configured on this server")
    server, dot, tool_name = method.partition(".")
    if not dot or not server or not tool_name:
        raise AppCallError(f"{MCP_APP}.{method}: call a tool as mcp.<server>.<tool>(**args)")
    state = _state(driver)
    tools = state.known(hub, method)
    if not tools:  # not listed yet (or a tool the run's catalogue did not have)
        found = (await hub.catalogue()).find(method)
        tools = [found[1]] if found is not None else []
    mutating = any(t.mutating for t in tools)
    needs_wait = _needs_wait(driver, state, cell_seq)
    if mutating and needs_wait:
        await _approve(driver, state, method, args, seq)
    # The hub lists again when the server says its tools changed: a tool not known as
    # mutating here must not run as one without the approval it would have needed.
    may_mutate = mutating or not needs_wait
    value: dict[str, Any] = await hub.call(server, tool_name, args, may_mutate=may_mutate)
    return value


class _McpInCell:
    """The ``mcp`` app as the app host's table holds it (its methods: the servers' tools)."""

    dynamic = True

    def mutating(self, driver: AppDriver, method: str) -> bool:
        return mcp_mutating(driver, method)

    def refuse(
        self, driver: AppDriver, method: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], str] | None:
        return None

    async def perform(self, driver: AppDriver, call: AppCall) -> Any:
        return await perform_mcp_call(
            driver, call.method, call.args, call.seq, cell_seq=call.cell_seq
        )


#: The in-cell ``mcp`` app (:mod:`jupyter_agent.runtime.loop.app_table` registers it).
MCP_IN_CELL: Final = _McpInCell()
