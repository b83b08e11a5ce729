"""The host side of in-cell app calls: performs ``chat.post``, ``llm.chat``, ``memory.*``
``notebook.*`` (:mod:`.notebook_app`) and ``mcp.<server>.<tool>`` (:mod:`.mcp_app`: the
configured MCP servers' tools, looked up before the static app table) for a cell.

Each call is logged as an ``app.call`` effect whose ``parent`` is the seq of the cell's
``cell.run``; a model call made for ``llm.chat`` runs the same pure
:func:`~jupyter_agent.llm.chat.chat` as the loop, its ``config.get`` and ``http.post``
effects logged under the app call's seq. No credential ever enters the kernel: the kernel
sends ``{app, method, args}`` and receives ``{ok, value, error, seq, mutation}``.

``memory.*`` goes to the run's :class:`~jupyter_agent.runtime.memory.service.MemoryService`
(``services.memory``) with author ``agent`` and the run's chat and run ids. A save whose
text holds a secret is refused before its intent is logged, and recorded with the text
replaced (the reply's ``args`` tells the kernel what to record in the cell's app calls).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_agent.core.loop.apps import find_method
from jupyter_agent.core.loop.drive import drive_async
from jupyter_agent.core.mcp.catalogue import MCP_APP
from jupyter_agent.effects import APP_CALL, Effect, EffectGen
from jupyter_agent.exceptions import AgentError, RunCancelled
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.messages import Message, Text, usage_to_json
from jupyter_agent.runtime.mcp.app import McpRunState, mcp_mutating, perform_mcp_call
from jupyter_agent.runtime.memory.service import perform_memory_call, refused_call
from jupyter_agent.runtime.notebook.app import perform_notebook_call

if TYPE_CHECKING:
    from jupyter_agent.effects import Result
    from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
    from jupyter_agent.trace.log import EffectLog


class AppDriver(Protocol):
    """What the app host needs of the run it serves (the run driver provides it)."""

    log: EffectLog
    run_id: str
    chat_id: str
    #: Whose run it is: the owner of the memories it saves and the proposals it makes.
    owner: str
    services: RunServices
    config: RunConfig
    #: The view of the newest message the run took (``{path?, cell?, cell_id?, ...}``).
    view: dict[str, Any] | None
    #: The run's MCP state (:class:`~jupyter_agent.runtime.mcp.app.McpRunState`).
    mcp: McpRunState

    @property
    def breaking(self) -> bool:
        """True once a hard break was asked for."""

    async def log_intent(self, effect: Effect) -> int:
        """Write an effect's intent line; returns its seq."""

    async def perform_nested(self, effect: Effect) -> Result:
        """Log and perform an effect made on behalf of a cell."""

    def post_bubble(self, text: str) -> str:
        """Show an in-cell progress bubble; returns its message id."""


__all__ = ["AppDriver", "CellHost", "messages_from_args", "perform_app_call"]


def messages_from_args(raw: Any) -> list[Message]:
    """``llm.chat``'s ``messages`` argument (a string, or ``{role, content}`` dicts)."""
    if isinstance(raw, str):
        return [Message(role="user", parts=(Text(text=raw),))]
    if not isinstance(raw, list) or not raw:
        raise AgentError("llm.chat needs messages: a string or a list of {role, content} dicts")
    out: list[Message] = []
    for item in raw:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            raise AgentError('each message needs "role" ("user" or "assistant") and "content"')
        out.append(Message(role=item["role"], parts=(Text(text=str(item.get("content", ""))),)))
    return out


async def _run_nested(driver: AppDriver, gen: EffectGen[ChatResult], parent: int) -> ChatResult:
    return await drive_async(
        gen, lambda effect: driver.perform_nested(replace(effect, parent=parent))
    )


async def _llm_chat(driver: AppDriver, args: dict[str, Any], seq: int, host: Any) -> str:
    tier = str(args.get("tier") or "classify")
    if tier not in ("classify", "vision", "codegen"):
        raise AgentError(f"unknown tier {tier!r}: use 'classify' or 'vision'")
    gen = chat(
        messages_from_args(args.get("messages")),
        system=str(args.get("system") or ""),
        tier=tier,
        tools=(),
        stream=False,
    )
    result = await _run_nested(driver, gen, seq)
    host.model_calls.append(
        {
            "tier": tier,
            "model": result.reply.model or result.tier.model,
            "usage": usage_to_json(result.reply.usage),
            "cost": result.cost_usd,
        }
    )
    return result.reply.text


async def perform_app_call(driver: AppDriver, effect: Effect, host: Any) -> dict[str, Any]:
    """Perform one app call for a cell and log it; returns the reply sent to the kernel."""
    app, method = str(effect.data.get("app")), str(effect.data.get("method"))
    args = effect.data.get("args") or {}
    is_mcp = app == MCP_APP  # its methods are the configured tools, not a static table
    spec = None if is_mcp else find_method(app, method)
    mutation = mcp_mutating(driver, method) if is_mcp else bool(spec and spec.mutation)
    refusal = None
    if app == "memory" and isinstance(args, dict):
        refusal = refused_call(driver.services.memory, method, args)
        if refusal is not None:  # the refused text is in no record of this call
            args = refusal[0]
            effect = replace(effect, data={**effect.data, "args": args})
    seq = await driver.log_intent(effect)
    value: Any = None
    error: str | None = None
    if driver.breaking:
        error = "cancelled by a hard break"
    elif refusal is not None:
        error = refusal[1]
    elif spec is None and not is_mcp:
        error = f"unknown app method {app}.{method}"
    elif not isinstance(args, dict):
        error = "app call arguments must be a JSON object"
    else:
        try:
            if is_mcp:
                cell_seq = getattr(host, "cell_seq", None)
                value = await perform_mcp_call(driver, method, args, seq, cell_seq=cell_seq)
            elif (app, method) == ("chat", "post"):
                value = driver.post_bubble(str(args.get("text", "")))
            elif (app, method) == ("llm", "chat"):
                value = await _llm_chat(driver, args, seq, host)
            elif app == "notebook":
                cell_id = str(getattr(host, "cell_id", "") or "")
                value = await perform_notebook_call(driver, method, args, seq=seq, cell_id=cell_id)
            elif app == "memory":
                value = await perform_memory_call(
                    driver.services.memory,
                    method,
                    args,
                    chat_id=driver.chat_id,
                    run_id=driver.run_id,
                    owner=driver.owner,
                )
        except RunCancelled:
            error = "cancelled by a hard break"
        except AgentError as err:
            error = str(err)
    # Scrubbed as recorded and as the kernel gets it (the arguments were, as they arrived).
    scrubber = driver.services.scrubber
    data = scrubber.clean_json({"ok": error is None, "value": value, "error": error})
    failed = None if error is None else {"message": data["error"]}
    driver.log.result(seq, APP_CALL, data, error=failed)
    reply = {**data, "seq": seq, "mutation": mutation}
    if refusal is not None:
        reply["args"] = args  # what the cell's app-call record keeps of the arguments
    return reply


class CellHost:
    """The host a cell's kernel calls back into: one per cell, its app calls parented to it."""

    def __init__(self, driver: AppDriver, cell_seq: int, cell_id: str = "") -> None:
        self.driver = driver
        self.cell_seq = cell_seq
        self.cell_id = cell_id  # the agent cell ("c3"): what a proposal names
        self.model_calls: list[dict[str, Any]] = []

    async def call(
        self, app: str, method: str, args: dict[str, Any], *, parent: int | None = None
    ) -> dict[str, Any]:
        effect = Effect(
            name=APP_CALL,
            data={"app": app, "method": method, "args": args},
            parent=parent if parent is not None else self.cell_seq,
        )
        return await perform_app_call(self.driver, effect, self)
