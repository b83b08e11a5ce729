"""The host side of in-cell app calls: performs ``chat.post`` and ``llm.chat`` itself, and
the calls of the apps registered in the run's table (:data:`AppTable`, each an
:class:`InCellApp`: ``memory.*``, ``notebook.*``, and ``mcp.<server>.<tool>``, whose methods
are the configured MCP servers' tools, looked up before the static app table) for a cell.
The host imports none of them: :mod:`jupyter_agent.runtime.loop.app_table` puts them in
the table the driver gives its cells (``AppDriver.apps``).

Each call is logged as an ``app.call`` effect whose ``parent`` is the seq of the cell's
``cell.run``; a model call made for ``llm.chat`` runs the same pure
:func:`~jupyter_agent.llm.chat.chat` as the loop, its ``config.get`` and ``http.post``
effects logged under the app call's seq. No credential ever enters the kernel: the kernel
sends ``{app, method, args}`` and receives ``{ok, value, error, seq, mutation}``.

An app may refuse a call before its intent is logged (:meth:`InCellApp.refuse`: the
``memory`` app refuses a save whose text holds a secret); the call is then recorded with
the arguments it answers (the reply's ``args`` tells the kernel what to record in the
cell's app calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_agent.core.app_spec import WithPayload
from jupyter_agent.core.loop.apps import find_method
from jupyter_agent.core.loop.drive import drive_async
from jupyter_agent.effects import APP_CALL, Effect, EffectGen
from jupyter_agent.exceptions import AgentError, RunCancelled
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.messages import Message, Text, usage_to_json

if TYPE_CHECKING:
    from jupyter_agent.effects import Result
    from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
    from jupyter_agent.trace.log import EffectLog


@dataclass(frozen=True, kw_only=True)
class AppCall:
    """One app call of a cell: its method and arguments, its seq (the ``app.call``'s) and
    the cell's (``cell_seq``, ``cell_id``: ``c3``, what a proposal names)."""

    method: str
    args: dict[str, Any]
    seq: int
    cell_seq: int | None = None
    cell_id: str = ""


class InCellApp(Protocol):
    """An in-cell app the host performs the calls of (registered in an :data:`AppTable`)."""

    #: Its methods are its own, not those of the static table
    #: (:func:`~jupyter_agent.core.loop.apps.find_method`): the ``mcp`` app's tools.
    dynamic: bool

    def mutating(self, driver: AppDriver, method: str) -> bool:
        """Whether a call of ``method`` may change something (asked of dynamic apps)."""
        ...

    def refuse(
        self, driver: AppDriver, method: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], str] | None:
        """Refuse a call before its intent is logged: (the arguments to record instead,
        the error), or None to perform it."""
        ...

    async def perform(self, driver: AppDriver, call: AppCall) -> Any:
        """Perform the call; its value, or an AgentError whose message the cell shows."""
        ...


AppTable = Mapping[str, InCellApp]
"""The in-cell apps a run's cells may call, by app name."""


class AppDriver(Protocol):
    """What the app host needs of the run it serves (the run driver provides it)."""

    log: EffectLog
    #: The in-cell apps its cells may call.
    apps: AppTable

    @property
    def run_id(self) -> str:
        """The run's id."""

    @property
    def chat_id(self) -> str:
        """The run's chat."""

    @property
    def owner(self) -> str:
        """Whose run it is: the owner of the memories it saves and the proposals it makes."""

    @property
    def services(self) -> RunServices:
        """The run's services."""

    @property
    def config(self) -> RunConfig:
        """The run's config snapshot."""

    @property
    def view(self) -> dict[str, Any] | None:
        """The view of the newest message the run took (``{path?, cell?, cell_id?, ...}``)."""

    @property
    def mcp(self) -> Any:
        """The run's MCP state (:class:`~jupyter_agent.runtime.mcp.app.McpRunState`)."""

    @mcp.setter
    def mcp(self, state: Any) -> None: ...

    @property
    def breaking(self) -> bool:
        """True once a hard break was asked for."""

    async def log_intent(self, effect: Effect) -> int:
        """Write an effect's intent line; returns its seq."""

    async def perform_nested(self, effect: Effect) -> Result:
        """Log and perform an effect made on behalf of a cell."""

    def post_bubble(self, text: str) -> str:
        """Show an in-cell progress bubble; returns its message id."""


__all__ = [
    "WithPayload",
    "AppCall",
    "AppDriver",
    "AppTable",
    "CellHost",
    "InCellApp",
    "messages_from_args",
    "perform_app_call",
]


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
    app_name, method = str(effect.data.get("app")), str(effect.data.get("method"))
    args = effect.data.get("args") or {}
    app = driver.apps.get(app_name)
    dynamic = app is not None and app.dynamic  # its methods are its own, not the table's
    spec = None if dynamic else find_method(app_name, method)
    mutation = app.mutating(driver, method) if dynamic and app else bool(spec and spec.mutation)
    refusal = None
    if app is not None and isinstance(args, dict):
        refusal = app.refuse(driver, method, args)
        if refusal is not None:  # the refused text is in no record of this call
            args = refusal[0]
            effect = replace(effect, data={**effect.data, "args": args})
    seq = await driver.log_intent(effect)
    value: Any = None
    payload: str | None = None
    error: str | None = None
    if driver.breaking:
        error = "cancelled by a hard break"
    elif refusal is not None:
        error = refusal[1]
    elif spec is None and not dynamic:
        error = f"unknown app method {app_name}.{method}"
    elif not isinstance(args, dict):
        error = "app call arguments must be a JSON object"
    else:
        try:
            if (app_name, method) == ("chat", "post"):
                value = driver.post_bubble(str(args.get("text", "")))
            elif (app_name, method) == ("llm", "chat"):
                value = await _llm_chat(driver, args, seq, host)
            elif app is not None:
                call = AppCall(
                    method=method,
                    args=args,
                    seq=seq,
                    cell_seq=getattr(host, "cell_seq", None),
                    cell_id=str(getattr(host, "cell_id", "") or ""),
                )
                value = await app.perform(driver, call)
                if isinstance(value, WithPayload):
                    value, payload = value.value, value.payload
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
    if payload is not None and error is None:
        reply["payload"] = payload  # not in the log: the value names its blob
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
