"""The steps the ``toolcaller`` programs are built from.

See :mod:`jupyter_agent.core.loop.machine`.

Each step is a small pure generator (or a plain function on the run's state): reading
config and the clock, draining the mailbox, posting replies (with the host's deferral of a
final reply while mail waits), running tool calls as cells and digesting them, the
wrap-up, and writing the turn record. None does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.digest.cells import BashResult, CellResult
from jupyter_agent.core.digest.record import recorded_content
from jupyter_agent.core.digest.render import DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.loop.approval import (
    POLICIES,
    Approvals,
    Decision,
    Policy,
    refusal,
    wait,
    writes_of,
)
from jupyter_agent.core.loop.inbox import Inbox, read_items
from jupyter_agent.core.loop.prompt import user_message
from jupyter_agent.core.loop.runstate import RunState, seconds_between
from jupyter_agent.core.turns import (
    EndCause,
    Reply,
    Steering,
    StopReason,
    TurnLLM,
    TurnRecord,
)
from jupyter_agent.effects import (
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    CLOCK_NOW,
    CONFIG_GET,
    ID_NEW,
    MAILBOX_DRAIN,
    TURN_APPEND,
    Effect,
    EffectGen,
)
from jupyter_agent.exceptions import ProviderError, RunCancelled
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.llm.fenced import render_tools_for_prompt
from jupyter_agent.llm.tiers import Tier
from jupyter_agent.messages import Message, Text, ToolCall, ToolResult, usage_from_json
from jupyter_agent.tools import ToolSpec

__all__ = [
    "REPEATS",
    "WRAPUP_PROMPTS",
    "add_user",
    "close_open_calls",
    "config",
    "count",
    "drain",
    "error_result",
    "finish",
    "now",
    "policy_of",
    "post",
    "post_final",
    "provider_failure_text",
    "repeating_text",
    "inbox_steering",
    "read_history",
    "run_tool",
    "run_tools",
    "take_cancel_detail",
    "take_steering",
    "tool_prompt",
    "wrap_up",
]

WRAPUP_PROMPTS: dict[str, str] = {
    "length": "Your last reply was cut off by the output limit.",
    "ceiling:model_calls": "This turn has used all the model calls it is allowed.",
    "ceiling:cells": "This turn has run all the cells it is allowed.",
    "ceiling:wall_s": "This turn has used all the time it is allowed.",
    "ceiling:cost_usd": "This turn has used all the budget it is allowed.",
    "break_soft": "The user asked you to stop.",
}
_WRAPUP_TAIL = (
    " Do not call any tool and do not write code to run. Reply now, in a few sentences of"
    " markdown: what you found (with the evidence you have), what is done, and what is left."
)


def now() -> EffectGen[str]:
    result = yield Effect(name=CLOCK_NOW, data={})
    return str(result.data)


def config(key: str) -> EffectGen[Any]:
    result = yield Effect(name=CONFIG_GET, data={"key": key})
    return result.data


def read_history(budget_tokens: int) -> EffectGen[HistoryWindow | None]:
    """The chat's history as its boot window of ``budget_tokens`` (``toolcaller@v3``):
    ``config.get`` ``{key: "history", budget_tokens}``; None when the host could not read it."""
    result = yield Effect(name=CONFIG_GET, data={"key": "history", "budget_tokens": budget_tokens})
    if result.error is not None:
        return None
    return HistoryWindow.from_json(result.data)


def drain(*, notices: bool = False) -> EffectGen[list[Any]]:
    """``mailbox.drain``; ``notices`` (``toolcaller@v5``): ask for the mailbox's notices too
    (``{notices: true}``; older versions' drains ask ``{}`` and are never handed any)."""
    result = yield Effect(name=MAILBOX_DRAIN, data={"notices": True} if notices else {})
    return list(result.data or [])


def post(state: RunState, text: str, *, done: bool) -> EffectGen[Inbox | None]:
    """Post a reply or bubble. A final reply the host deferred returns the queued items."""
    result = yield Effect(name=CHAT_POST, data={"text": text, "done": done})
    if result.cancelled:
        raise RunCancelled(detail=result.data)
    if isinstance(result.data, dict) and "deferred" in result.data:
        return read_items(result.data.get("deferred") or [])
    state.replies.append(Reply(text=text, done=done))
    return None


def post_final(state: RunState, text: str) -> EffectGen[None]:
    """Post a final reply on a path that cannot go on: deferred messages become steering."""
    while True:
        deferred = yield from post(state, text, done=True)
        if deferred is None:
            return
        state.steering.extend(inbox_steering(deferred))


def inbox_steering(inbox: Inbox, *, skip_first: bool = False) -> list[Steering]:
    """The steering entries of a drain's notices and messages (``skip_first``: without the
    message that opens the run, its ``userText``). Only a v5 drain holds notices."""
    messages = inbox.messages[1:] if skip_first else inbox.messages
    return [*(n.steering() for n in inbox.notices), *(m.steering() for m in messages)]


def take_steering(
    state: RunState, messages: list[Message], inbox: Inbox, *, cell_ids: bool = False
) -> None:
    """Mid-run notices and messages join the turn's steering and the next model call
    (notices first, each a ``[notice] ...`` line; ``cell_ids``: the v5 view header)."""
    for notice in inbox.notices:
        state.steering.append(notice.steering())
        add_user(messages, Message(role="user", parts=(Text(text=notice.line),)))
    for item in inbox.messages:
        state.steering.append(item.steering())
        add_user(
            messages,
            user_message(
                item.text, at=item.at, view=item.view, attachments=item.files, cell_ids=cell_ids
            ),
        )
    state.soft_break = state.soft_break or inbox.soft_break


def take_cancel_detail(state: RunState, cancel: RunCancelled) -> None:
    """What a hard break handed back: a cut cell's bubbles and the host's deferred mail."""
    for text in cancel.detail.get("bubbles") or ():
        state.replies.append(Reply(text=str(text), done=False))
    deferred = read_items(cancel.detail.get("deferred") or [])
    state.steering.extend(inbox_steering(deferred))


def count(state: RunState, result: ChatResult) -> None:
    state.add_call(result.reply.usage, result.cost_usd, result.reply.model or result.tier.model)


def tool_prompt(tier: Tier, tools: Sequence[ToolSpec]) -> str:
    mode = tier.profile.tool_mode
    return "" if mode == "native" else render_tools_for_prompt(tools, mode)


def add_user(messages: list[Message], message: Message) -> None:
    """Append a user message, merging into a trailing user message (roles must alternate)."""
    if messages and messages[-1].role == "user":
        messages[-1] = Message(role="user", parts=messages[-1].parts + message.parts)
    else:
        messages.append(message)


def error_result(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call_id=call.id, content=(Text(text=text),), is_error=True)


def policy_of(value: str) -> Policy:
    """The configured approval policy; an unknown value waits for every cell (the safe
    reading of a config this code does not know)."""
    for policy in POLICIES:
        if value == policy:
            return policy
    return "every_cell"


def approve(
    call: ToolCall, code: str, state: RunState, ceilings: Ceilings, approvals: Approvals | None
) -> EffectGen[Decision | None]:
    """``toolcaller@v5``: wait for the person when the policy says so (``approvals``; None:
    an older version, nothing waits). None when the call may run, else the refusal's
    decision. The wait's timeout is the turn's wall time left."""
    if approvals is None or not approvals.needs_wait(writes=writes_of(call.args)):
        return None
    left = ceilings.max_wall_s - seconds_between(state.started, (yield from now()))
    if left <= 0:
        return Decision(approve=False, by="timeout")
    approval_id = str((yield Effect(name=ID_NEW, data={"kind": "approval"})).data)
    kind: Literal["cell", "bash"] = "bash" if call.name == "bash" else "cell"
    decision = yield from wait(approval_id=approval_id, kind=kind, code=code, timeout_s=left)
    approvals.take(decision)
    if decision.by == "break":
        state.soft_break = True  # the loop ends at its next drain
    return None if decision.approve else decision


def run_tool(
    call: ToolCall,
    state: RunState,
    ceilings: Ceilings,
    options: DigestOptions,
    approvals: Approvals | None = None,
) -> EffectGen[ToolResult]:
    """Run one tool call (a "cell" span) and digest its result into a ToolResult; with
    ``approvals`` (v5) a call the policy holds waits for the person first."""
    if call.name == "run_cell":
        code = call.args.get("code")
        if not isinstance(code, str) or not code.strip():
            return error_result(call, 'run_cell needs {"code": "<python code>"}.')
        denied = yield from approve(call, code, state, ceilings, approvals)
        if denied is not None:
            return error_result(call, refusal(denied))
        state.cells += 1
        cell_id = f"c{state.cells}"
        data = {"cell_id": cell_id, "code": code, "timeout_s": ceilings.cell_timeout_s}
        result = yield Effect(name=CELL_RUN, data=data)
        if result.cancelled:
            raise RunCancelled(detail=result.data)
        if result.error is not None:
            return error_result(call, f"The cell could not run: {result.error.get('message')}")
        for text in result.data.get("bubbles") or ():
            state.replies.append(Reply(text=str(text), done=False))
        cell = CellResult.from_json(result.data)
        for made in cell.model_calls:
            state.add_call(usage_from_json(made.get("usage") or {}), made.get("cost"), None)
        # The digest the driver recorded (and showed) is what the model reads; a log
        # written before digests were recorded has none: digest here, as then.
        read = recorded_content(result.data, cell, options)
        if read is None:
            digest = digest_cell(cell, options)
            read = digest.content, digest.is_error
        if cell.error is not None:
            state.last_failure = (code, f"{cell.error.ename}: {cell.error.evalue}"[:300])
    elif call.name == "bash" and ceilings.bash_enabled:
        command = call.args.get("command")
        if not isinstance(command, str) or not command.strip():
            return error_result(call, 'bash needs {"command": "<command line>"}.')
        denied = yield from approve(call, command, state, ceilings, approvals)
        if denied is not None:
            return error_result(call, refusal(denied))
        state.cells += 1
        result = yield Effect(
            name=BASH_RUN, data={"command": command, "timeout_s": ceilings.cell_timeout_s}
        )
        if result.cancelled:
            raise RunCancelled(detail=result.data)
        if result.error is not None:
            return error_result(call, f"The command could not run: {result.error.get('message')}")
        read = recorded_content(result.data, None, options)
        if read is None:
            digest = digest_bash(BashResult.from_json(result.data), options)
            read = digest.content, digest.is_error
        if read[1]:
            ran = BashResult.from_json(result.data)
            said = ran.stderr.text.strip() or ran.stdout.text.strip()
            last = said.splitlines()[-1:] or [""]
            state.last_failure = (command, f"exit {ran.returncode}: {last[0]}"[:300])
    else:
        return error_result(call, f"Unknown tool {call.name!r}: use run_cell.")
    content, is_error = read
    return ToolResult(call_id=call.id, content=content, is_error=is_error)


def run_tools(
    calls: Sequence[ToolCall],
    state: RunState,
    ceilings: Ceilings,
    options: DigestOptions,
    approvals: Approvals | None = None,
) -> EffectGen[tuple[list[ToolResult], EndCause | None]]:
    """Run a reply's tool calls in order; past the cell ceiling, answer them as not run.
    With ``approvals`` (v5), once a soft break answered a wait the calls left are not run
    either."""
    outcomes: list[ToolResult] = []
    cause: EndCause | None = None
    for call in calls:
        if state.cells >= ceilings.max_cells:
            cause = "ceiling:cells"
            outcomes.append(error_result(call, "Not run: the cell ceiling was reached."))
        elif approvals is not None and state.soft_break:
            outcomes.append(error_result(call, refusal(Decision(approve=False, by="break"))))
        elif cause == "repeating":
            outcomes.append(error_result(call, "Not run: the same failure came three times."))
        else:
            outcomes.append((yield from run_tool(call, state, ceilings, options, approvals)))
            if state.count_failure() >= REPEATS:
                cause = "repeating"
    return outcomes, cause


def close_open_calls(messages: list[Message]) -> None:
    """Answer tool calls left without results (a length stop mid tool call)."""
    if not messages or messages[-1].role != "assistant":
        return
    calls = messages[-1].tool_calls
    if calls:
        note = "Not run: the turn is wrapping up."
        messages.append(Message(role="user", parts=tuple(error_result(c, note) for c in calls)))


def wrap_up(
    messages: list[Message], system: str, tier: Tier, cause: EndCause, state: RunState
) -> EffectGen[str]:
    """Ask the model for a text-only summary; returns the text to post."""
    close_open_calls(messages)
    prompt = WRAPUP_PROMPTS.get(cause, "This turn must end now.") + _WRAPUP_TAIL
    add_user(messages, Message(role="user", parts=(Text(text=prompt),)))
    if cause != "break_soft":  # stopping on request answers nothing asked meanwhile
        state.read_steering()
    result = yield from chat(messages, system=system, tier=tier, tools=())
    count(state, result)
    text = result.reply.text.strip()
    return text or f"I stopped before finishing ({cause}) and have no summary to give."


#: How many times the same failure (same code, same error) ends a ``repeat_stop`` turn.
REPEATS = 3


def repeating_text(state: RunState) -> str:
    """The final reply of a turn ended for repeating one failure (``toolcaller@v7``)."""
    worst = max((state.failures or {}).items(), key=lambda kv: kv[1], default=None)
    error = worst[0][1] if worst is not None else "the same error"
    return (
        f"I stopped: the same code failed {REPEATS} times with the same error "
        f"(`{error}`), so running it again would not help. Tell me how you want to go on, "
        "or fix what it needs (a file, a package, a setting) and ask again."
    )


def provider_failure_text(err: ProviderError, *, attempts: bool = False) -> str:
    """The reply of a turn whose model call failed (``attempts``: say how many were made)."""
    status = f" (HTTP {err.status})" if err.status else ""
    tries = len(err.attempts)
    after = f" after {tries} attempts" if attempts and tries > 1 else ""
    return f"The model call failed{status}{after}: {err}. Nothing more was run in this turn."


def finish(
    run_id: str,
    chat_id: str,
    state: RunState,
    spaces: dict[str, Any],
    user_text: str,
    stop: StopReason,
    cause: EndCause,
) -> EffectGen[TurnRecord]:
    """Write the turn record (also the minimal one of a hard break) and return it."""
    ended = yield from now()
    turn_id = (yield Effect(name=ID_NEW, data={"kind": "turn"})).data
    turn = TurnRecord(
        id=str(turn_id),
        chat_id=chat_id,
        run_id=run_id,
        user_text=user_text,
        created=state.started,
        steering=state.read_part(),
        replies=tuple(state.replies),
        from_agent=str(spaces.get("agent_name", "agent")),
        interrupted=stop in ("break_hard", "error"),
        duration_ms=round(seconds_between(state.started, ended) * 1000),
        model=state.model,
        llm=TurnLLM(
            stop_reason=stop,
            end_cause=cause,
            model_calls=state.model_calls,
            cells=state.cells,
            usage=state.usage,
            cost=state.cost,
            fingerprints=dict(state.fingerprints),
            window=state.window,
        ),
        recall=state.recall,
        programs=state.programs,
    )
    yield Effect(name=TURN_APPEND, data=turn.to_json())
    return turn
