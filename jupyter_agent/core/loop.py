"""The toolcaller loop (``toolcaller@v1``): one conversation turn as a pure state machine.

:func:`toolcaller` is a generator: it yields :class:`~jupyter_agent.core.effects.Effect`
values and receives :class:`~jupyter_agent.core.effects.Result` values; it never does I/O.
The driver performs the effects; replay feeds the same generator from the effect log.

The cycle (the seed's "The tools: run_cell and bash")::

    drain mailbox -> llm.chat -> stop?
      tool   -> run each cell (cell.run / bash.run) -> digest -> ToolResult -> loop
      done   -> post the final reply (done: true), append the turn, return
      length -> ask the model to wrap up text-only, post the summary

- Interim assistant text before a tool call posts as a ``done: false`` bubble.
- A cell error comes back as an ``is_error`` ToolResult: the model corrects itself.
- A mailbox message mid-run joins the next model call as user content (``steering``);
  a soft break ends the run at the next drain through the wrap-up; a hard break (the driver
  cancels the effect in flight, whose result reads ``{"cancelled": "break_hard"}``) ends the
  run at once with ``stopReason: break_hard`` and a minimal turn.
- Every message the host routed to this run is in its turn (as ``userText`` or
  ``steering``): the host performs the final ``chat.post`` (done true) only when the
  mailbox holds no message, closing the mailbox in the same step; otherwise it answers
  ``{"deferred": [items]}`` and the loop takes them as steering (on the done path the
  answer so far becomes a bubble and the model reads them next). A hard break's cancelled
  result may carry ``deferred`` too, and a cut cell's ``bubbles``; both join the turn.
- Progress bubbles a cell posts (the in-cell ``chat.post``) come back as the cell.run
  result's ``bubbles`` and join the turn's replies (done false) in order.
- Ceilings (model calls, cells, wall time, cost) end the run through the same wrap-up.
- Everything the loop depends on arrives through effects: ``config.get`` keys ``ceilings``,
  ``spaces``, ``history`` (the chat's previous turn records), ``llm.tier.*`` and
  ``llm.profile.*``; ``clock.now``; ``id.new``; ``mailbox.drain`` (the first drain holds
  the message that started the run).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from jupyter_agent.core.apps import APPS
from jupyter_agent.core.cells import BashResult, CellResult
from jupyter_agent.core.digest import DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.effects import (
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
from jupyter_agent.core.inbox import Inbox, read_items
from jupyter_agent.core.prompt import RuntimeContext, build_system, user_message
from jupyter_agent.core.runstate import Ceilings, RunState, seconds_between
from jupyter_agent.core.tools import ToolSpec, tools_for
from jupyter_agent.core.turns import EndCause, Reply, StopReason, TurnLLM, TurnRecord
from jupyter_agent.core.window import boot_window
from jupyter_agent.exceptions import ConfigError, ProviderError, RunCancelled
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.llm.fenced import render_tools_for_prompt
from jupyter_agent.llm.tiers import Tier, resolve_tier
from jupyter_agent.messages import Message, Text, ToolCall, ToolResult, usage_from_json

__all__ = ["PROGRAM", "WRAPUP_PROMPTS", "toolcaller"]

PROGRAM = "toolcaller@v1"

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


def toolcaller(run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """Run one turn of chat ``chat_id`` as run ``run_id``; return the turn record."""
    started = yield from _now()
    ceilings = Ceilings.from_json((yield from _config("ceilings")))
    spaces = (yield from _config("spaces")) or {}
    state = RunState(started=started)
    try:
        tier = yield from resolve_tier("codegen")
    except ConfigError as err:
        # A bad tier is the person's to fix: say so in the chat, not only in a log.
        inbox = read_items((yield from _drain()))
        text = inbox.messages[0].text if inbox.messages else ""
        state.steering.extend(m.steering() for m in inbox.messages[1:])
        with contextlib.suppress(RunCancelled):  # the turn below still says what happened
            yield from _post_final(state, f"The agent is not configured correctly: {err}")
        return (yield from _finish(run_id, chat_id, state, spaces, text, "error", "error"))
    state.model = tier.model
    history = [TurnRecord.from_json(t) for t in ((yield from _config("history")) or [])]
    inbox = read_items((yield from _drain()))
    if inbox.hard_break or not inbox.messages:
        # Broken before it began, or nothing to answer: end with a minimal turn (that still
        # holds the messages it was given).
        cause: EndCause = "break_hard" if inbox.hard_break else "error"
        stop: StopReason = "break_hard" if inbox.hard_break else "error"
        first_text = inbox.messages[0].text if inbox.messages else ""
        state.steering.extend(m.steering() for m in inbox.messages[1:])
        return (yield from _finish(run_id, chat_id, state, spaces, first_text, stop, cause))
    opening = inbox.messages[0]
    user_text = opening.text
    for later in inbox.messages[1:]:
        state.steering.append(later.steering())

    tools = tools_for(bash_enabled=ceilings.bash_enabled)
    system = build_system(
        spaces,
        tools=tools,
        apps=APPS,
        context=RuntimeContext(
            agent_space=str(spaces.get("agent_space", "")),
            chat_id=chat_id,
            agent_name=str(spaces.get("agent_name", "agent")),
            installed_apps=tuple(app.name for app in APPS),
            cwd=opening.cwd,
        ),
        tool_prompt=_tool_prompt(tier, tools),
    )
    state.fingerprints = {
        "system": system.fingerprint_system,
        "identity": system.fingerprint_identity,
    }
    budget = min(ceilings.history_budget_tokens, tier.profile.context_window // 4)
    messages: list[Message] = list(boot_window(history, budget_tokens=budget).messages)
    for item in inbox.messages:
        _add_user(
            messages, user_message(item.text, at=item.at, view=item.view, attachments=item.files)
        )
    options = DigestOptions(
        value_budget_tokens=ceilings.value_budget_tokens,
        total_budget_tokens=ceilings.total_budget_tokens,
        vision=tier.profile.vision,
        env_prefix=str(spaces.get("env_prefix", "")),
        home=str(spaces.get("home", "")),
    )

    def finish(stop: StopReason, cause: EndCause) -> EffectGen[TurnRecord]:
        return _finish(run_id, chat_id, state, spaces, user_text, stop, cause)

    end_cause: EndCause | None = None
    first = True
    try:
        while True:
            if not first:
                inbox = read_items((yield from _drain()))
                _take_steering(state, messages, inbox)
                if inbox.hard_break:
                    raise RunCancelled()
            first = False
            if state.soft_break:
                end_cause = "break_soft"
                break
            end_cause = state.ceiling_hit(ceilings, (yield from _now()))
            if end_cause is not None:
                break
            result = yield from chat(messages, system=system.text, tier=tier, tools=tools)
            _count(state, result)
            reply = result.reply
            messages.append(reply.as_message())
            if result.format_error:
                _add_user(messages, Message(role="user", parts=(Text(text=result.format_error),)))
                continue
            if reply.stop == "length":
                end_cause = "length"
                break
            if reply.stop == "tool" and reply.tool_calls:
                if reply.text.strip():
                    yield from _post(state, reply.text, done=False)
                outcomes, end_cause = yield from _run_tools(
                    reply.tool_calls, state, ceilings, options
                )
                messages.append(Message(role="user", parts=tuple(outcomes)))
                if end_cause is not None:
                    break
                continue
            deferred = yield from _post(state, reply.text, done=True)
            if deferred is None:
                return (yield from finish("done", "done"))
            # Messages came while the model answered: they belong to this turn. What it
            # said shows as a bubble, and the next model call reads them.
            if reply.text.strip():
                yield from _post(state, reply.text, done=False)
            _take_steering(state, messages, deferred)

        wrap = yield from _wrap_up(messages, system.text, tier, end_cause, state)
        yield from _post_final(state, wrap)
        return (yield from finish("wrapup", end_cause))
    except RunCancelled as cancel:
        _take_cancel_detail(state, cancel)
        return (yield from finish("break_hard", "break_hard"))
    except ProviderError as err:
        try:
            yield from _post_final(state, _provider_failure_text(err))
        except RunCancelled as cancel:  # broken while saying so: the turn still gets written
            _take_cancel_detail(state, cancel)
            return (yield from finish("break_hard", "break_hard"))
        return (yield from finish("error", "error"))


# --- steps ------------------------------------------------------------------------------


def _now() -> EffectGen[str]:
    result = yield Effect(name=CLOCK_NOW, data={})
    return str(result.data)


def _config(key: str) -> EffectGen[Any]:
    result = yield Effect(name=CONFIG_GET, data={"key": key})
    return result.data


def _drain() -> EffectGen[list[Any]]:
    result = yield Effect(name=MAILBOX_DRAIN, data={})
    return list(result.data or [])


def _post(state: RunState, text: str, *, done: bool) -> EffectGen[Inbox | None]:
    """Post a reply or bubble. A final reply the host deferred returns the queued items."""
    result = yield Effect(name=CHAT_POST, data={"text": text, "done": done})
    if result.cancelled:
        raise RunCancelled(detail=result.data)
    if isinstance(result.data, dict) and "deferred" in result.data:
        return read_items(result.data.get("deferred") or [])
    state.replies.append(Reply(text=text, done=done))
    return None


def _post_final(state: RunState, text: str) -> EffectGen[None]:
    """Post a final reply on a path that cannot go on: deferred messages become steering."""
    while True:
        deferred = yield from _post(state, text, done=True)
        if deferred is None:
            return
        state.steering.extend(m.steering() for m in deferred.messages)


def _take_steering(state: RunState, messages: list[Message], inbox: Inbox) -> None:
    """Mid-run messages join the turn's steering and the next model call."""
    for item in inbox.messages:
        state.steering.append(item.steering())
        _add_user(
            messages,
            user_message(item.text, at=item.at, view=item.view, attachments=item.files),
        )
    state.soft_break = state.soft_break or inbox.soft_break


def _take_cancel_detail(state: RunState, cancel: RunCancelled) -> None:
    """What a hard break handed back: a cut cell's bubbles and the host's deferred mail."""
    for text in cancel.detail.get("bubbles") or ():
        state.replies.append(Reply(text=str(text), done=False))
    deferred = read_items(cancel.detail.get("deferred") or [])
    state.steering.extend(m.steering() for m in deferred.messages)


def _count(state: RunState, result: ChatResult) -> None:
    state.add_call(result.reply.usage, result.cost_usd, result.reply.model or result.tier.model)


def _tool_prompt(tier: Tier, tools: Sequence[ToolSpec]) -> str:
    mode = tier.profile.tool_mode
    return "" if mode == "native" else render_tools_for_prompt(tools, mode)


def _add_user(messages: list[Message], message: Message) -> None:
    """Append a user message, merging into a trailing user message (roles must alternate)."""
    if messages and messages[-1].role == "user":
        messages[-1] = Message(role="user", parts=messages[-1].parts + message.parts)
    else:
        messages.append(message)


def _error_result(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call_id=call.id, content=(Text(text=text),), is_error=True)


def _run_tool(
    call: ToolCall, state: RunState, ceilings: Ceilings, options: DigestOptions
) -> EffectGen[ToolResult]:
    """Run one tool call (a "cell" span) and digest its result into a ToolResult."""
    if call.name == "run_cell":
        code = call.args.get("code")
        if not isinstance(code, str) or not code.strip():
            return _error_result(call, 'run_cell needs {"code": "<python code>"}.')
        state.cells += 1
        cell_id = f"c{state.cells}"
        data = {"cell_id": cell_id, "code": code, "timeout_s": ceilings.cell_timeout_s}
        result = yield Effect(name=CELL_RUN, data=data)
        if result.cancelled:
            raise RunCancelled(detail=result.data)
        if result.error is not None:
            return _error_result(call, f"The cell could not run: {result.error.get('message')}")
        for text in result.data.get("bubbles") or ():
            state.replies.append(Reply(text=str(text), done=False))
        cell = CellResult.from_json(result.data)
        for made in cell.model_calls:
            state.add_call(usage_from_json(made.get("usage") or {}), made.get("cost"), None)
        digest = digest_cell(cell, options)
    elif call.name == "bash" and ceilings.bash_enabled:
        command = call.args.get("command")
        if not isinstance(command, str) or not command.strip():
            return _error_result(call, 'bash needs {"command": "<command line>"}.')
        state.cells += 1
        result = yield Effect(
            name=BASH_RUN, data={"command": command, "timeout_s": ceilings.cell_timeout_s}
        )
        if result.cancelled:
            raise RunCancelled(detail=result.data)
        if result.error is not None:
            return _error_result(call, f"The command could not run: {result.error.get('message')}")
        digest = digest_bash(BashResult.from_json(result.data), options)
    else:
        return _error_result(call, f"Unknown tool {call.name!r}: use run_cell.")
    return ToolResult(call_id=call.id, content=digest.content, is_error=digest.is_error)


def _run_tools(
    calls: Sequence[ToolCall], state: RunState, ceilings: Ceilings, options: DigestOptions
) -> EffectGen[tuple[list[ToolResult], EndCause | None]]:
    """Run a reply's tool calls in order; past the cell ceiling, answer them as not run."""
    outcomes: list[ToolResult] = []
    cause: EndCause | None = None
    for call in calls:
        if state.cells >= ceilings.max_cells:
            cause = "ceiling:cells"
            outcomes.append(_error_result(call, "Not run: the cell ceiling was reached."))
        else:
            outcomes.append((yield from _run_tool(call, state, ceilings, options)))
    return outcomes, cause


def _close_open_calls(messages: list[Message]) -> None:
    """Answer tool calls left without results (a length stop mid tool call)."""
    if not messages or messages[-1].role != "assistant":
        return
    calls = messages[-1].tool_calls
    if calls:
        note = "Not run: the turn is wrapping up."
        messages.append(Message(role="user", parts=tuple(_error_result(c, note) for c in calls)))


def _wrap_up(
    messages: list[Message], system: str, tier: Tier, cause: EndCause, state: RunState
) -> EffectGen[str]:
    """Ask the model for a text-only summary; returns the text to post."""
    _close_open_calls(messages)
    prompt = WRAPUP_PROMPTS.get(cause, "This turn must end now.") + _WRAPUP_TAIL
    _add_user(messages, Message(role="user", parts=(Text(text=prompt),)))
    result = yield from chat(messages, system=system, tier=tier, tools=())
    _count(state, result)
    text = result.reply.text.strip()
    return text or f"I stopped before finishing ({cause}) and have no summary to give."


def _provider_failure_text(err: ProviderError) -> str:
    status = f" (HTTP {err.status})" if err.status else ""
    return f"The model call failed{status}: {err}. Nothing more was run in this turn."


def _finish(
    run_id: str,
    chat_id: str,
    state: RunState,
    spaces: dict[str, Any],
    user_text: str,
    stop: StopReason,
    cause: EndCause,
) -> EffectGen[TurnRecord]:
    """Write the turn record (also the minimal one of a hard break) and return it."""
    ended = yield from _now()
    turn_id = (yield Effect(name=ID_NEW, data={"kind": "turn"})).data
    turn = TurnRecord(
        id=str(turn_id),
        chat_id=chat_id,
        run_id=run_id,
        user_text=user_text,
        created=state.started,
        steering=tuple(state.steering),
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
        ),
    )
    yield Effect(name=TURN_APPEND, data=turn.to_json())
    return turn
