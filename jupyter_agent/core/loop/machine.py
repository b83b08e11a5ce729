"""The toolcaller loop: one conversation turn as a pure state machine.

:func:`toolcaller` is a generator: it yields :class:`~jupyter_agent.effects.Effect`
values and receives :class:`~jupyter_agent.effects.Result` values; it never does I/O.
The driver performs the effects; replay feeds the same generator from the effect log. A log
replays with the version its header names: what each version reads and shows is its
:class:`~jupyter_agent.core.loop.features.Features` record (:data:`PROGRAMS`), never a
version number compared here.

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
  ``spaces``, ``history`` (the previous turn records, or with ``Features.window`` the
  window), ``llm.tier.*``, ``llm.profile.*``, ``memory`` (``Features.recall``) and ``mcp``
  (``Features.mcp``), or with ``Features.start`` the one key ``start`` for all of them
  (:mod:`jupyter_agent.core.loop.start`); ``recall.search`` (``Features.recall``; with
  ``Features.start`` only when something is findable); ``clock.now``; ``id.new``;
  ``mailbox.drain`` (the first drain holds the message that started the run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.loop.approval import Approvals
from jupyter_agent.core.loop.features import FEATURES, PROGRAM, PROGRAMS, Features
from jupyter_agent.core.loop.inbox import read_items
from jupyter_agent.core.loop.opening import (
    NEW_CHAT_LEAD,
    read_past,
    recall,
    recall_planned,
    say_and_end,
)
from jupyter_agent.core.loop.prompt import (
    RuntimeContext,
    build_system,
    kernel_packages_of,
    user_message,
)
from jupyter_agent.core.loop.runstate import RunState
from jupyter_agent.core.loop.start import history_budget, read_start, recall_plan
from jupyter_agent.core.loop.steps import (
    WRAPUP_PROMPTS,
    add_user,
    config,
    count,
    drain,
    finish,
    inbox_steering,
    now,
    policy_of,
    post,
    post_final,
    provider_failure_text,
    repeating_text,
    run_tools,
    take_cancel_detail,
    take_steering,
    tool_prompt,
    wrap_up,
)
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import MemoryConfig, read_memory
from jupyter_agent.core.turns import EndCause, StopReason, TurnRecord, TurnWindow
from jupyter_agent.effects import EffectGen
from jupyter_agent.exceptions import ConfigError, ProviderError, RunCancelled
from jupyter_agent.llm.chat import chat
from jupyter_agent.llm.tiers import Tier, resolve_tier
from jupyter_agent.messages import Message, Text
from jupyter_agent.tools import ToolSpec, tools_for

__all__ = [
    "NEW_CHAT_LEAD",
    "PROGRAM",
    "PROGRAMS",
    "V4_PROGRAMS",
    "V5_PROGRAMS",
    "V6_PROGRAMS",
    "V7_PROGRAMS",
    "WRAPUP_PROMPTS",
    "Features",
    "Turn",
    "end",
    "program",
    "recall",
    "setup",
    "step",
    "toolcaller",
]

#: The programs a ``toolcaller@v4`` turn runs (its record's and its log header's
#: ``programs``); likewise for v5, v6 and v7 (:attr:`Features.programs`).
V4_PROGRAMS: Final = FEATURES["toolcaller@v4"].programs
V5_PROGRAMS: Final = FEATURES["toolcaller@v5"].programs
V6_PROGRAMS: Final = FEATURES["toolcaller@v6"].programs
V7_PROGRAMS: Final = FEATURES["toolcaller@v7"].programs


@dataclass(kw_only=True)
class Turn:
    """What :func:`setup` builds and each :func:`step` reads and extends."""

    run_id: str
    chat_id: str
    state: RunState
    spaces: dict[str, object]
    ceilings: Ceilings
    tier: Tier
    tools: tuple[ToolSpec, ...]
    system: str
    options: DigestOptions
    user_text: str
    messages: list[Message] = field(default_factory=list)
    #: ``messages[:history_len]`` is the boot window: the stable prefix a provider's
    #: prompt cache can keep (0: not marked, without ``Features.window``).
    history_len: int = 0
    #: What the program version does (:mod:`jupyter_agent.core.loop.features`).
    features: Features = FEATURES["toolcaller@v4"]
    #: The turn's approval state (None: nothing ever waits, without ``Features.approvals``).
    approvals: Approvals | None = None

    @property
    def version(self) -> int:
        """The program version's number (``features.version``)."""
        return self.features.version

    @property
    def notices(self) -> bool:
        """Whether this turn's drains take notices (``features.notices``)."""
        return self.features.notices

    def finish(self, stop: StopReason, cause: EndCause) -> EffectGen[TurnRecord]:
        """Write this turn's record (see :func:`~jupyter_agent.core.loop.steps.finish`)."""
        return finish(
            self.run_id, self.chat_id, self.state, self.spaces, self.user_text, stop, cause
        )


def program(name: str, run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """The generator of the recorded program ``name`` (a key of :data:`PROGRAMS`);
    ValueError for a program this code does not have."""
    return toolcaller(run_id, chat_id, version=Features.of(name).version)


def toolcaller(
    run_id: str, chat_id: str, *, version: int = PROGRAMS[PROGRAM]
) -> EffectGen[TurnRecord]:
    """Run one turn of chat ``chat_id`` as run ``run_id``; return the turn record.

    ``version``: the program version whose features the turn has.
    """
    counts_failures = Features.of_version(version).failed_calls_count
    turn = yield from setup(run_id, chat_id, version=version)
    if isinstance(turn, TurnRecord):  # it ended before the first model call
        return turn
    try:
        first = True
        while True:
            cause = yield from step(turn, drain_first=not first)
            first = False
            if cause is not None:
                return (yield from end(turn, cause))
    except RunCancelled as cancel:
        take_cancel_detail(turn.state, cancel)
        return (yield from turn.finish("break_hard", "break_hard"))
    except ProviderError as err:
        if counts_failures:
            turn.state.model_calls += 1  # it was made; its usage (none billed) stays 0
        try:
            text = provider_failure_text(err, attempts=counts_failures)
            yield from post_final(turn.state, text)
        except RunCancelled as cancel:  # broken while saying so: the turn still gets written
            take_cancel_detail(turn.state, cancel)
            return (yield from turn.finish("break_hard", "break_hard"))
        return (yield from turn.finish("error", "error"))


def setup(
    run_id: str, chat_id: str, *, version: int = PROGRAMS[PROGRAM]
) -> EffectGen[Turn | TurnRecord]:
    """Read config, the tier, history and the opening drain; build the prompt.

    ``version``: the program version whose :class:`~.features.Features` the turn has (what
    it reads, see :mod:`jupyter_agent.core.loop.features`).

    Returns the :class:`Turn` to step, or the turn record of a run that ended here (a bad
    tier, an unreadable history, a hard break before the first model call, nothing to
    answer).
    """
    features = Features.of_version(version)
    started = yield from now()
    start = (yield from read_start("codegen")) if features.start else None
    if start is not None:
        ceilings, spaces = start.limits, start.spaces
    else:
        ceilings = Ceilings.from_json((yield from config("ceilings")))
        spaces = (yield from config("spaces")) or {}
    state = RunState(started=started, programs=features.programs)
    if features.unread_next:
        state.steering_read = 0
    if features.repeat_stop:
        state.failures = {}
    try:
        tier = start.resolve_tier() if start is not None else (yield from resolve_tier("codegen"))
    except ConfigError as err:
        # A bad tier is the person's to fix: say so in the chat, not only in a log. Only the
        # first message is kept here (a bad tier becomes the demo model before a run starts,
        # so this path is for configs no check foresaw).
        inbox = read_items((yield from drain(notices=features.notices)))
        state.steering.extend(n.steering() for n in inbox.notices)
        text = inbox.messages[0].text if inbox.messages else ""
        say = f"The agent is not configured correctly: {err}"
        return (yield from say_and_end(run_id, chat_id, state, spaces, text, say))
    state.model = tier.model
    budget = history_budget(ceilings, tier)
    past = start.past() if start is not None else (yield from read_past(features, budget))
    if past is None:
        # Answering without the chat's context would mislead: say so and end.
        inbox = read_items((yield from drain(notices=features.notices)))
        text = inbox.messages[0].text if inbox.messages else ""
        state.steering.extend(inbox_steering(inbox, skip_first=True))
        say = "The chat's earlier turns could not be read."
        return (yield from say_and_end(run_id, chat_id, state, spaces, text, say))
    inbox = read_items((yield from drain(notices=features.notices)))
    state.steering.extend(inbox_steering(inbox, skip_first=True))
    if inbox.hard_break or not inbox.messages:
        # Broken before it began, or nothing to answer: end with a minimal turn (that still
        # holds the messages it was given).
        cause: EndCause = "break_hard" if inbox.hard_break else "error"
        stop: StopReason = "break_hard" if inbox.hard_break else "error"
        first_text = inbox.messages[0].text if inbox.messages else ""
        return (yield from finish(run_id, chat_id, state, spaces, first_text, stop, cause))
    opening = inbox.messages[0]
    if start is not None:
        memory: MemoryConfig | None = start.memory
    else:
        memory = (yield from read_memory()) if features.recall else None
    tools = tools_for(bash_enabled=ceilings.bash_enabled, writes=features.writes)
    apps = features.apps
    if features.mcp:
        catalogue = (
            start.mcp if start is not None else McpCatalogue.from_json((yield from config("mcp")))
        )
        mcp_app = catalogue.app_spec()
        apps += (mcp_app,) if mcp_app is not None else ()  # none configured: v5's prompt
    system = build_system(
        spaces,
        tools=tools,
        apps=apps,
        context=RuntimeContext(
            agent_space=str(spaces.get("agent_space", "")),
            chat_id=chat_id,
            agent_name=str(spaces.get("agent_name", "agent")),
            installed_apps=tuple(app.name for app in apps),
            cwd=opening.cwd,
            packages=kernel_packages_of(spaces),
        ),
        tool_prompt=tool_prompt(tier, tools),
        memory=memory.categories if memory is not None else None,
    )
    state.fingerprints = {
        "system": system.fingerprint_system,
        "identity": system.fingerprint_identity,
    }
    shown = past.boot(budget)
    if past.layout is not None:
        state.window = TurnWindow(
            raw=shown.turns_included,
            l1=shown.l1,
            l2=shown.l2,
            omitted=shown.omitted,
            tokens=shown.tokens,
        )
    messages: list[Message] = list(shown.messages)
    if start is not None and memory is not None:  # only when something is findable
        plan = recall_plan(past, shown, memory.recall, start.findable, opening.text, chat_id)
        if plan is not None:
            yield from recall_planned(state, messages, plan)
    elif memory is not None:
        yield from recall(state, messages, memory, opening.text, chat_id, past.turns, shown)
    for notice in inbox.notices:  # what the host said before the message came
        add_user(messages, Message(role="user", parts=(Text(text=notice.line),)))
    for item in inbox.messages:
        view, files = item.view, item.files
        message = user_message(
            item.text, at=item.at, view=view, attachments=files, cell_ids=features.cell_ids
        )
        add_user(messages, message)
    return Turn(
        run_id=run_id,
        chat_id=chat_id,
        state=state,
        spaces=spaces,
        ceilings=ceilings,
        tier=tier,
        tools=tuple(tools),
        system=system.text,
        options=DigestOptions.from_config(ceilings, spaces, tier.profile),
        user_text=opening.text,
        messages=messages,
        history_len=len(shown.messages) if past.layout is not None else 0,
        features=features,
        approvals=Approvals(policy=policy_of(ceilings.approval)) if features.approvals else None,
    )


def step(turn: Turn, *, drain_first: bool) -> EffectGen[EndCause | None]:
    """One round: (drain,) check breaks and ceilings, call the model, act on its reply.

    Returns None to go on, ``"done"`` once the final reply is posted, or the cause to wrap
    up with. Raises RunCancelled on a hard break and ProviderError on a failed model call.
    """
    state, messages = turn.state, turn.messages
    if drain_first:
        inbox = read_items((yield from drain(notices=turn.features.notices)))
        take_steering(state, messages, inbox, cell_ids=turn.features.cell_ids)
        if inbox.hard_break:
            raise RunCancelled()
    if state.soft_break:
        return "break_soft"
    ceiling = state.ceiling_hit(turn.ceilings, (yield from now()))
    if ceiling is not None:
        return ceiling
    state.read_steering()
    result = yield from chat(
        messages, system=turn.system, tier=turn.tier, tools=turn.tools, history=turn.history_len
    )
    count(state, result)
    reply = result.reply
    messages.append(reply.as_message())
    if result.format_error:
        add_user(messages, Message(role="user", parts=(Text(text=result.format_error),)))
        return None
    if reply.stop == "length":
        return "length"
    if reply.stop == "tool" and reply.tool_calls:
        if reply.text.strip():
            yield from post(state, reply.text, done=False)
        outcomes, cause = yield from run_tools(
            reply.tool_calls, state, turn.ceilings, turn.options, turn.approvals
        )
        messages.append(Message(role="user", parts=tuple(outcomes)))
        return cause
    deferred = yield from post(state, reply.text, done=True)
    if deferred is None:
        return "done"
    # Messages came while the model answered: they belong to this turn (taken first, so a
    # hard break during the bubble cannot lose them). What it said shows as a bubble, and
    # the next model call reads them.
    take_steering(state, messages, deferred, cell_ids=turn.features.cell_ids)
    if reply.text.strip():
        yield from post(state, reply.text, done=False)
    return None


def end(turn: Turn, cause: EndCause) -> EffectGen[TurnRecord]:
    """Finish a turn: as ``done`` when the final reply is out, else through the wrap-up."""
    if cause == "done":
        return (yield from turn.finish("done", "done"))
    if cause == "repeating":  # a summary call would likely repeat it once more: say it
        yield from post_final(turn.state, repeating_text(turn.state))
        return (yield from turn.finish("wrapup", cause))
    wrap = yield from wrap_up(turn.messages, turn.system, turn.tier, cause, turn.state)
    yield from post_final(turn.state, wrap)
    return (yield from turn.finish("wrapup", cause))
