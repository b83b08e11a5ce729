"""The planning step of ``plan_first``: one text-only model call before the tool loop (pure).

:func:`plan` asks the model for a short numbered plan of the person's request, with no
tool offered (``tools=()``: the adapter sends none, or, when the conversation already
holds tool calls such as autorecall's synthetic one, sends them with ``tool_choice`` none,
so the model cannot call one; in a text tool mode the reply is not parsed for calls).
Only the reply's text is kept: a plan is words, never a call.

With a plan, the conversation the tool loop continues is::

    ... the person's message + PLAN_PROMPT  (one user message)
    assistant: the plan (text only)
    user: GO_PROMPT

and the plan is posted as a ``done: false`` bubble, so the person sees it before the first
cell. An empty plan changes nothing: the conversation stays as it was (the model call
still counts in the turn's ``modelCalls``, usage and cost).
"""

from __future__ import annotations

from typing import Final

from jupyter_agent.core.loop.machine import Turn
from jupyter_agent.core.loop.steps import add_user, count, now, post
from jupyter_agent.core.turns import EndCause
from jupyter_agent.effects import EffectGen
from jupyter_agent.llm.chat import chat
from jupyter_agent.messages import Message, Text

__all__ = ["GO_PROMPT", "PLAN_MAX_TOKENS", "PLAN_PROMPT", "plan"]

#: Joins the person's message for the planning call only.
PLAN_PROMPT: Final = (
    "Before you do anything, write a short numbered plan for this request: at most five"
    " steps, one line each, in the order you will take them. Reply with the plan only: do"
    " not call any tool and do not write code to run yet."
)
#: The user message after the plan: the tool loop starts from it.
GO_PROMPT: Final = (
    "Now carry out the plan, step by step, with the tools you have. If what you find calls"
    " for a different step, say so briefly and go on."
)
#: The planning call's output limit: a plan is short (a cut plan is posted as it is).
PLAN_MAX_TOKENS: Final = 600


def plan(turn: Turn) -> EffectGen[EndCause | None]:
    """Ask for the plan, post it, put it in ``turn.messages`` (see the module docstring).

    Returns None to go on with the tool loop, or the cause to end with when a soft break
    or a ceiling came first (no model call is made then). Raises RunCancelled on a hard
    break and ProviderError on a failed model call, like
    :func:`~jupyter_agent.core.loop.machine.step`.
    """
    state = turn.state
    if state.soft_break:
        return "break_soft"
    ceiling = state.ceiling_hit(turn.ceilings, (yield from now()))
    if ceiling is not None:
        return ceiling
    asked = list(turn.messages)
    add_user(asked, Message(role="user", parts=(Text(text=PLAN_PROMPT),)))
    result = yield from chat(
        asked,
        system=turn.system,
        tier=turn.tier,
        tools=(),
        max_tokens=PLAN_MAX_TOKENS,
        history=turn.history_len,
    )
    count(state, result)
    text = result.reply.text.strip()
    if not text:
        return None
    asked.append(Message(role="assistant", parts=(Text(text=text),)))
    add_user(asked, Message(role="user", parts=(Text(text=GO_PROMPT),)))
    turn.messages = asked
    yield from post(state, text, done=False)
    return None
