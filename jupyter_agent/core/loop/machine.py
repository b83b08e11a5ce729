"""The toolcaller loop (``toolcaller@v6``): one conversation turn as a pure state machine.

Versions (a log replays with the version its header names, :data:`PROGRAMS`):

- ``toolcaller@v1``: the first.
- ``toolcaller@v2``: a model call that failed (after the transport's retries) counts in
  the turn's ``modelCalls``, and the failure reply says how many attempts were made.
- ``toolcaller@v3``: the history is read as the window, not as the whole chat:
  ``config.get`` ``{key: "history", budget_tokens}`` is answered with only the newest
  turns that budget keeps and the count of the older ones (a
  :class:`~jupyter_agent.core.history.window.HistoryWindow`), so a run's log does not grow with
  the chat; the prompt is the one v2 builds for the same chat. A history that cannot be
  read ends the run ``error``, saying so (v2 went on without it).
- ``toolcaller@v4``: memory and recall (issue 15). After the window and the opening drain,
  ``config.get {key: "memory"}`` gives the memory categories in use with their counts (the
  system prompt lists them; its fingerprint leaves the counts out) and the recall
  settings; then ``autorecall@v1`` (:mod:`jupyter_agent.core.memory.program`) makes at
  most one ``recall.search`` and, with hits, injects a synthetic ``run_cell`` call and its
  result after the boot window (whose cache prefix, ``history_len``, is unchanged) and
  before the user's message (in a new chat, with nothing before it, a short user message
  ``NEW_CHAT_LEAD`` opens the request: providers want the user's message first). The
  turn record gains ``recall`` (when something was recalled) and ``programs``; its
  prompt lists the ``memory`` app (:func:`~jupyter_agent.core.loop.apps.apps_for`). v1..v3
  run as they did (their logs replay byte for byte).
- ``toolcaller@v5``: the person's notebook and approvals (issue 17). The prompt lists the
  ``notebook`` app; ``run_cell`` and ``bash`` take ``writes: bool`` (the cell writes or
  deletes files); ``ceilings.approval`` (``none``, ``writes``, ``every_cell``) makes a
  cell wait for the person (``approval.wait``, :mod:`jupyter_agent.core.loop.approval`) before
  it runs; mailbox ``notice`` items reach the model as ``[notice] ...`` lines; the user
  message header names the viewed cell by id. v1..v4 run as they did.
- ``toolcaller@v6``: MCP tools (issue 18). After the memory read, ``config.get {key:
  "mcp"}`` gives the :class:`~jupyter_agent.core.mcp.catalogue.McpCatalogue`; with a
  server in it the prompt lists the ``mcp`` app (``McpCatalogue.app_spec``: a line per
  tool) and names it among the installed apps, else the prompt is v5's. v1..v5 as before.

:func:`toolcaller` is a generator: it yields :class:`~jupyter_agent.effects.Effect`
values and receives :class:`~jupyter_agent.effects.Result` values; it never does I/O.
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
  ``spaces``, ``history`` (v1/v2: the chat's previous turn records; v3: its window),
  ``llm.tier.*``, ``llm.profile.*``, ``memory`` (v4) and ``mcp`` (v6); ``recall.search`` (v4);
  ``clock.now``; ``id.new``; ``mailbox.drain`` (the first drain holds the message that
  started the run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.history.window import Window, boot_window
from jupyter_agent.core.loop.approval import Approvals
from jupyter_agent.core.loop.apps import apps_for
from jupyter_agent.core.loop.inbox import read_items
from jupyter_agent.core.loop.prompt import RuntimeContext, build_system, user_message
from jupyter_agent.core.loop.runstate import RunState
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
    read_history,
    run_tools,
    take_cancel_detail,
    take_steering,
    tool_prompt,
    wrap_up,
)
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import (
    AUTORECALL_PROGRAM,
    MemoryConfig,
    autorecall,
    read_memory,
)
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
    "WRAPUP_PROMPTS",
    "Turn",
    "end",
    "program",
    "recall",
    "setup",
    "step",
    "toolcaller",
]

#: The version new runs use.
PROGRAM = "toolcaller@v6"
#: Every version this code replays, by its recorded name.
PROGRAMS: Final = {
    "toolcaller@v1": 1,
    "toolcaller@v2": 2,
    "toolcaller@v3": 3,
    "toolcaller@v4": 4,
    "toolcaller@v5": 5,
    "toolcaller@v6": 6,
}
#: The programs a ``toolcaller@v4`` turn runs (its record's and its log header's
#: ``programs``).
V4_PROGRAMS: Final = ("toolcaller@v4", AUTORECALL_PROGRAM)
#: The programs a ``toolcaller@v5`` turn runs.
V5_PROGRAMS: Final = ("toolcaller@v5", AUTORECALL_PROGRAM)
#: The programs a ``toolcaller@v6`` turn runs.
V6_PROGRAMS: Final = ("toolcaller@v6", AUTORECALL_PROGRAM)
#: The programs each version's turn records (v1..v3: none).
_RUN_PROGRAMS: Final = {4: V4_PROGRAMS, 5: V5_PROGRAMS, 6: V6_PROGRAMS}
#: The user message that opens a request whose recall call nothing precedes (a new chat,
#: or an empty window): providers (Anthropic's Messages API, strict chat templates) want
#: the first message to be the user's, not the synthetic assistant call.
NEW_CHAT_LEAD: Final = (
    "(A new chat. Before my first message the agent searched memory and earlier chats.)"
)


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
    #: prompt cache can keep (0: not marked, as v1/v2 sent it).
    history_len: int = 0
    #: The program version's behaviour (see the module docstring).
    version: int = 4
    #: The turn's approval state (v5; None: nothing ever waits, as in v1..v4).
    approvals: Approvals | None = None

    @property
    def notices(self) -> bool:
        """Whether this turn's drains take notices (v5)."""
        return self.version >= 5

    def finish(self, stop: StopReason, cause: EndCause) -> EffectGen[TurnRecord]:
        """Write this turn's record (see :func:`~jupyter_agent.core.loop.steps.finish`)."""
        return finish(
            self.run_id, self.chat_id, self.state, self.spaces, self.user_text, stop, cause
        )


def program(name: str, run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """The generator of the recorded program ``name`` (a key of :data:`PROGRAMS`);
    ValueError for a program this code does not have."""
    version = PROGRAMS.get(name)
    if version is None:
        raise ValueError(f"unknown program {name!r}: this code has {', '.join(PROGRAMS)}")
    return toolcaller(run_id, chat_id, version=version)


def toolcaller(
    run_id: str, chat_id: str, *, version: int = PROGRAMS[PROGRAM]
) -> EffectGen[TurnRecord]:
    """Run one turn of chat ``chat_id`` as run ``run_id``; return the turn record.

    ``version``: the program version's behaviour (see the module docstring).
    """
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
        if version >= 2:
            turn.state.model_calls += 1  # it was made; its usage (none billed) stays 0
        try:
            yield from post_final(turn.state, provider_failure_text(err, attempts=version >= 2))
        except RunCancelled as cancel:  # broken while saying so: the turn still gets written
            take_cancel_detail(turn.state, cancel)
            return (yield from turn.finish("break_hard", "break_hard"))
        return (yield from turn.finish("error", "error"))


def setup(
    run_id: str, chat_id: str, *, version: int = PROGRAMS[PROGRAM]
) -> EffectGen[Turn | TurnRecord]:
    """Read config, the tier, history and the opening drain; build the prompt.

    ``version``: 3 reads the history as its window, 4 also memory and recall, 5 the
    notebook app, approvals and notices, 6 the MCP catalogue (see the module docstring).

    Returns the :class:`Turn` to step, or the turn record of a run that ended here (a bad
    tier, a hard break before the first model call, nothing to answer).
    """
    started = yield from now()
    ceilings = Ceilings.from_json((yield from config("ceilings")))
    spaces = (yield from config("spaces")) or {}
    state = RunState(started=started)
    notices = version >= 5
    if version >= 4:
        state.programs = _RUN_PROGRAMS[version]
    try:
        tier = yield from resolve_tier("codegen")
    except ConfigError as err:
        # A bad tier is the person's to fix: say so in the chat, not only in a log.
        inbox = read_items((yield from drain(notices=notices)))
        state.steering.extend(n.steering() for n in inbox.notices)
        text = inbox.messages[0].text if inbox.messages else ""
        # (toolcaller@v1 kept only the first message here; a bad tier now becomes the demo
        # model before a run starts, so this path is for configs no check foresaw.)
        try:
            yield from post_final(state, f"The agent is not configured correctly: {err}")
        except RunCancelled as cancel:  # the turn below still says what happened
            take_cancel_detail(state, cancel)
        return (yield from finish(run_id, chat_id, state, spaces, text, "error", "error"))
    state.model = tier.model
    budget = min(ceilings.history_budget_tokens, tier.profile.context_window // 4)
    layout: dict[str, int] | None = None
    anchor_at: int | None = None
    if version >= 3:
        window = yield from read_history(budget)
        if window is None:
            # Answering without the chat's context would mislead: say so and end.
            inbox = read_items((yield from drain(notices=notices)))
            text = inbox.messages[0].text if inbox.messages else ""
            state.steering.extend(inbox_steering(inbox, skip_first=True))
            try:
                yield from post_final(state, "The chat's earlier turns could not be read.")
            except RunCancelled as cancel:
                take_cancel_detail(state, cancel)
            return (yield from finish(run_id, chat_id, state, spaces, text, "error", "error"))
        history, older, chunks = list(window.turns), window.omitted, window.chunks
        layout, anchor_at = window.layout, window.anchor
    else:
        history = [TurnRecord.from_json(t) for t in ((yield from config("history")) or [])]
        older, chunks = 0, ()
    inbox = read_items((yield from drain(notices=notices)))
    if inbox.hard_break or not inbox.messages:
        # Broken before it began, or nothing to answer: end with a minimal turn (that still
        # holds the messages it was given).
        cause: EndCause = "break_hard" if inbox.hard_break else "error"
        stop: StopReason = "break_hard" if inbox.hard_break else "error"
        first_text = inbox.messages[0].text if inbox.messages else ""
        state.steering.extend(inbox_steering(inbox, skip_first=True))
        return (yield from finish(run_id, chat_id, state, spaces, first_text, stop, cause))
    opening = inbox.messages[0]
    state.steering.extend(inbox_steering(inbox, skip_first=True))
    memory = (yield from read_memory()) if version >= 4 else None
    tools = tools_for(bash_enabled=ceilings.bash_enabled, writes=version >= 5)
    apps = apps_for(version)  # an app added later is not in an older version's prompt
    if version >= 6:
        mcp = McpCatalogue.from_json((yield from config("mcp")))
        mcp_app = mcp.app_spec()  # None without a configured server: v5's prompt
        apps += (mcp_app,) if mcp_app is not None else ()
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
        ),
        tool_prompt=tool_prompt(tier, tools),
        memory=memory.categories if memory is not None else None,
    )
    state.fingerprints = {
        "system": system.fingerprint_system,
        "identity": system.fingerprint_identity,
    }
    shown = boot_window(
        history,
        budget_tokens=budget,
        older=older,
        first_position=older + 1,
        chunks=chunks,
        chunk_turns=None if layout is None else layout["chunk_turns"],
        anchor_at=anchor_at,
    )
    if layout is not None:
        state.window = TurnWindow(
            raw=shown.turns_included,
            l1=shown.l1,
            l2=shown.l2,
            omitted=shown.omitted,
            tokens=shown.tokens,
        )
    messages: list[Message] = list(shown.messages)
    if memory is not None:
        yield from recall(state, messages, memory, opening.text, chat_id, history, shown)
    for notice in inbox.notices:  # (v5) what the host said before the message came
        add_user(messages, Message(role="user", parts=(Text(text=notice.line),)))
    for item in inbox.messages:
        add_user(
            messages,
            user_message(
                item.text,
                at=item.at,
                view=item.view,
                attachments=item.files,
                cell_ids=version >= 5,
            ),
        )
    options = DigestOptions.from_config(ceilings, spaces, tier.profile)
    approvals = Approvals(policy=policy_of(ceilings.approval)) if version >= 5 else None
    return Turn(
        run_id=run_id,
        chat_id=chat_id,
        state=state,
        spaces=spaces,
        ceilings=ceilings,
        tier=tier,
        tools=tuple(tools),
        system=system.text,
        options=options,
        user_text=opening.text,
        messages=messages,
        history_len=len(shown.messages) if layout is not None else 0,
        version=version,
        approvals=approvals,
    )


def recall(
    state: RunState,
    messages: list[Message],
    memory: MemoryConfig,
    text: str,
    chat_id: str,
    history: list[TurnRecord],
    shown: Window,
) -> EffectGen[None]:
    """``autorecall@v1`` for the message ``text`` (v4): with hits, the synthetic call and
    result join ``messages`` (after the window) and the turn's record. When nothing
    precedes the call, :data:`NEW_CHAT_LEAD` (a user message) does, so the request's first
    message is the user's on every provider."""
    raw = history[len(history) - shown.turns_included :] if shown.turns_included else []
    recalled = yield from autorecall(
        text,
        memory.recall,
        chat_id=chat_id,
        exclude_since=raw[0].created if raw else None,
        exclude_chunks=[(c.level, c.first_turn) for c in shown.summaries],
    )
    if recalled is not None:
        if not messages:
            messages.append(Message(role="user", parts=(Text(text=NEW_CHAT_LEAD),)))
        messages.extend(recalled.messages())
        state.recall = recalled.record()


def step(turn: Turn, *, drain_first: bool) -> EffectGen[EndCause | None]:
    """One round: (drain,) check breaks and ceilings, call the model, act on its reply.

    Returns None to go on, ``"done"`` once the final reply is posted, or the cause to wrap
    up with. Raises RunCancelled on a hard break and ProviderError on a failed model call.
    """
    state, messages = turn.state, turn.messages
    if drain_first:
        inbox = read_items((yield from drain(notices=turn.notices)))
        take_steering(state, messages, inbox, cell_ids=turn.version >= 5)
        if inbox.hard_break:
            raise RunCancelled()
    if state.soft_break:
        return "break_soft"
    ceiling = state.ceiling_hit(turn.ceilings, (yield from now()))
    if ceiling is not None:
        return ceiling
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
    take_steering(state, messages, deferred, cell_ids=turn.version >= 5)
    if reply.text.strip():
        yield from post(state, reply.text, done=False)
    return None


def end(turn: Turn, cause: EndCause) -> EffectGen[TurnRecord]:
    """Finish a turn: as ``done`` when the final reply is out, else through the wrap-up."""
    if cause == "done":
        return (yield from turn.finish("done", "done"))
    wrap = yield from wrap_up(turn.messages, turn.system, turn.tier, cause, turn.state)
    yield from post_final(turn.state, wrap)
    return (yield from turn.finish("wrapup", cause))
