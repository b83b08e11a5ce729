"""The boot window (pure): a chat's previous turns as messages, within a token budget.

:func:`boot_window` renders the chat's earlier turns (oldest first in ``turns``) as
user/assistant message pairs: the user's text and steering, then the replies the user saw
(progress bubbles and the final reply); an interrupted turn says so in a short marker.

The chat is covered at decreasing resolution: the newest turns raw (in full), then level-1
chunk summaries going back, then level-2 ones (a level-2 summary replacing the level-1
summaries it spans; resolution only decreases going back), until the budget is full or
turn 1 is covered (costs by :func:`jupyter_agent.core.tokens.count_tokens`). Only the
turns no summary covers are named, by one line ("N earlier turns ... not shown"); a gap
(a chunk whose summary is not made yet) is skipped and older summaries still shown. That
older material (the omission line, then the summaries oldest first) leads the first user
message. If even the newest turn alone does not fit, it is shown clipped (head and tail
kept) so the window is never empty.

The anchored rule (``chunk_turns`` given: ``toolcaller@v3``), for prompt caches. The raw
region starts at a chunk boundary ``a`` (the first turn of a level-1 chunk, ``n*C+1``):
the OLDEST boundary at which the raw turns ``a..N`` plus the older material fit the
budget, the older material (what covers ``1..a-1``) being picked from the summaries alone
within ``budget // SUMMARY_SHARE``, so it depends on ``a`` and the stored summaries, never
on ``N``. As the chat grows, the raw region grows turn by turn with ``a`` fixed (the cost
of ``a..N`` only grows, so the oldest fitting boundary never moves back); once it no
longer fits, ``a`` moves to a later boundary, whole chunks passing into their summaries.
So consecutive turns' windows share a byte-identical prefix (the older material and the
raw turns before the newest) except when the anchor moves or a summary appears. In this
mode the older material is its own text part ahead of the first raw turn's text (the
stable part a cache breakpoint can end at). When even the newest boundary does not fit
(turns too long for the budget) the window falls back to the sliding rule. Without
``chunk_turns`` (v1/v2) the sliding rule is used throughout, as those versions built it:
the newest turns that fit, then summaries within what is left.

Turn positions (``ChunkSummary.first_turn``/``last_turn``) are 1-based positions of turns
in the chat; ``turns[0]`` is at position ``first_position`` (1 unless the caller passes a
tail of the chat). The messages start with a user message and alternate roles; they end
with an assistant message when at least one turn is shown in full. The caller passes
``budget_tokens = min(configured, context_window // 4)``.

The window in O(window) (``toolcaller@v3``): the store reads only the newest turns the
window can use, :func:`tail_size` deciding from their costs (:func:`turn_tokens`, newest
first) how many :func:`boot_window` keeps (given ``turn_count``, ``chunk_turns`` and the
summaries: by the anchored rule), and hands them back as a :class:`HistoryWindow`
(:mod:`jupyter_agent.core.history.answer`, also importable from here).
``boot_window(w.turns, older=w.omitted, first_position=w.omitted + 1, chunks=w.chunks,
chunk_turns=C)`` then builds exactly the window the whole list would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jupyter_agent.core.history.answer import HistoryWindow, window_record
from jupyter_agent.core.history.pick import ChunkSummary, omission, pick_summaries, summary_text
from jupyter_agent.core.tokens import chars_for_tokens, count_tokens
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.messages import Message, Text

__all__ = [
    "ChunkSummary",
    "SUMMARY_SHARE",
    "HistoryWindow",
    "Window",
    "anchor",
    "boot_window",
    "render_turn",
    "tail_size",
    "turn_tokens",
    "window_record",
]

_OMISSION_RESERVE = 24  # tokens kept free for the "N earlier turns" line
#: Under the anchored rule the older material gets at most ``budget // SUMMARY_SHARE``.
SUMMARY_SHARE = 3


@dataclass(frozen=True)
class Window:
    """The boot window: its messages, how many turns are in full, and its token count."""

    messages: list[Message] = field(default_factory=list)
    turns_included: int = 0
    tokens: int = 0
    #: What the older material holds: level-1 and level-2 summaries, turns named omitted.
    l1: int = 0
    l2: int = 0
    omitted: int = 0
    #: The summaries shown, oldest first: picking again from just these gives them again,
    #: so a host can record only these (a run's log does not grow with the chat).
    summaries: tuple[ChunkSummary, ...] = ()


def render_turn(turn: TurnRecord) -> tuple[str, str]:
    """The (user text, assistant text) of one earlier turn as the model will read them."""
    user = f"[{turn.created}] {turn.user_text}".rstrip()
    for steer in turn.steering:
        user += f"\n\n[added while the agent worked, {steer.at}] {steer.text}"
    replies = [r.text.strip() for r in turn.replies if r.text.strip()]
    assistant = "\n\n".join(replies)
    if turn.interrupted:
        cause = turn.llm.end_cause
        marker = f"[this turn was interrupted ({cause}) before it finished]"
        assistant = f"{assistant}\n\n{marker}" if assistant else marker
    elif not assistant:
        assistant = "[no reply was sent in this turn]"
    return user, assistant


def turn_tokens(turn: TurnRecord) -> int:
    """What one earlier turn costs of the budget in full (its :func:`render_turn` texts)."""
    user, assistant = render_turn(turn)
    return count_tokens(user) + count_tokens(assistant)


def tail_size(
    costs: Sequence[int],
    budget_tokens: int,
    *,
    complete: bool,
    turn_count: int | None = None,
    chunk_turns: int | None = None,
    chunks: Sequence[ChunkSummary] = (),
) -> int | None:
    """How many of the newest turns :func:`boot_window` keeps (in full or clipped).

    ``costs``: the :func:`turn_tokens` of the chat's newest turns, newest first;
    ``complete``: they are all of the chat's turns. None when that cannot be told yet
    (every cost so far fits: the caller reads older turns and asks again). With
    ``turn_count`` (the chat's turns) and ``chunk_turns``: by the anchored rule (see the
    module docstring), ``chunks`` being the summaries the window may use.
    """
    if chunk_turns is not None and turn_count is not None and budget_tokens > 0:
        start = anchor(
            turn_count,
            costs,
            budget_tokens,
            chunk_turns=chunk_turns,
            chunks=chunks,
            complete=complete,
        )
        if start is None:
            return None
        if start > 0:
            return turn_count - start + 1
    if budget_tokens <= 0 or not costs:
        return 0 if complete or budget_tokens <= 0 else None
    used = 0
    for cost in costs:
        used += cost
        if used > budget_tokens:
            break
    else:
        return len(costs) if complete else None
    # Not all fit: as boot_window, keep room for the omission line; a newest turn too long
    # even for that is kept, to be clipped.
    return max(1, _select_costs(costs, max(0, budget_tokens - _OMISSION_RESERVE))[0])


def anchor(
    turn_count: int,
    costs: Sequence[int],
    budget_tokens: int,
    *,
    chunk_turns: int,
    chunks: Sequence[ChunkSummary] = (),
    complete: bool = True,
) -> int | None:
    """The first raw position under the anchored rule (see the module docstring).

    ``costs``: :func:`turn_tokens` of the newest turns, newest first (``costs[0]`` is
    position ``turn_count``). Returns a chunk boundary (1 when the whole chat fits); 0
    when even the newest boundary does not fit (the sliding rule applies); None when the
    costs read so far cannot tell (all fit and more are not ``complete``).
    """
    if chunk_turns < 1:
        raise ValueError(f"chunk_turns must be >= 1, not {chunk_turns}")
    if turn_count <= 0:
        return 1
    best = 0
    boundary = (turn_count - 1) // chunk_turns * chunk_turns + 1
    raw = 0
    counted = 0  # positions turn_count .. turn_count - counted + 1 are summed in raw
    while boundary >= 1:
        need = turn_count - boundary + 1
        if need > len(costs):
            if not complete:
                return None
            break  # a tail was passed: boundaries before it are not this caller's to judge
        while counted < need:
            raw += costs[counted]
            counted += 1
        if raw > budget_tokens:
            break
        if raw + older_cost(chunks, boundary, budget_tokens) <= budget_tokens:
            best = boundary
        boundary -= chunk_turns
    return best


def older_cost(chunks: Sequence[ChunkSummary], start: int, budget_tokens: int) -> int:
    """What the older material before raw position ``start`` costs under the anchored rule."""
    if start <= 1:
        return 0
    share = budget_tokens // SUMMARY_SHARE
    _, used, uncovered = pick_summaries(chunks, start - 1, max(0, share - _OMISSION_RESERVE))
    return used + (_OMISSION_RESERVE if uncovered else 0)


def _clip(text: str, tokens: int) -> str:
    """``text`` cut to about ``tokens`` tokens, keeping its head and tail."""
    if count_tokens(text) <= tokens:
        return text
    marker = "\n[... cut to fit the history budget ...]\n"
    if chars_for_tokens(tokens) <= len(marker) * 2:
        return text[: chars_for_tokens(tokens)]
    room = chars_for_tokens(tokens) - len(marker)
    head = room * 2 // 3
    tail = room - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def _select(
    rendered: list[tuple[str, str]],
    budget: int,
) -> tuple[int, int]:
    """How many of the newest turns fit ``budget`` in full, and their tokens."""
    costs = [count_tokens(user) + count_tokens(assistant) for user, assistant in rendered]
    return _select_costs(costs[::-1], budget)


def _select_costs(costs: Sequence[int], budget: int) -> tuple[int, int]:
    """How many of the leading ``costs`` (newest first) fit ``budget``, and their sum."""
    used = 0
    kept = 0
    for cost in costs:
        if used + cost > budget:
            break
        used += cost
        kept += 1
    return kept, used


def boot_window(
    turns: Sequence[TurnRecord],
    *,
    budget_tokens: int,
    chunks: Sequence[ChunkSummary] = (),
    first_position: int = 1,
    older: int = 0,
    chunk_turns: int | None = None,
    anchor_at: int | None = None,
) -> Window:
    """The chat's earlier turns as messages within ``budget_tokens`` (see module docstring).

    ``older``: how many turns of the chat precede ``turns[0]`` and were not passed (a
    :class:`HistoryWindow`'s ``omitted``); they count as not shown. ``chunk_turns``: use
    the anchored rule with chunks of that many turns. ``anchor_at``: the first raw
    position the host already chose by that rule over all of the chat's summaries (0: the
    sliding rule), as :class:`HistoryWindow` records it; not chosen again from ``chunks``,
    which may then be only the summaries shown.
    """
    if not turns or budget_tokens <= 0:
        return Window()
    if chunk_turns is not None:
        anchored = _anchored(
            turns, budget_tokens, chunks, first_position, older, chunk_turns, anchor_at
        )
        if anchored is not None:
            return anchored
    rendered = [render_turn(t) for t in turns]
    kept, used = _select(rendered, budget_tokens)
    clipped: tuple[str, str] | None = None
    if kept < len(rendered) or older:
        # Older material follows: keep room for the omission line.
        kept, used = _select(rendered, max(0, budget_tokens - _OMISSION_RESERVE))
        if kept == 0:
            user, assistant = rendered[-1]
            room = max(2, budget_tokens - _OMISSION_RESERVE)
            clipped = (_clip(user, room // 3), _clip(assistant, room - room // 3))
            kept = 1
            used = count_tokens(clipped[0]) + count_tokens(clipped[1])

    older_count = len(rendered) - kept
    lead: list[str] = []
    counts = (0, 0, 0)
    summaries: list[ChunkSummary] = []
    if older_count or older:
        newest_older = first_position + older_count - 1
        summaries, s_used, uncovered = pick_summaries(
            chunks, newest_older, budget_tokens - used - _OMISSION_RESERVE
        )
        lead, counts = _lead(summaries, uncovered - first_position + 1 + older)
        used += s_used

    shown = rendered[len(rendered) - kept :]
    if clipped is not None:
        shown = [clipped]
    return _window(shown, lead, kept, separate=False, counts=counts, summaries=summaries)


def _window(
    shown: Sequence[tuple[str, str]],
    lead: list[str],
    kept: int,
    *,
    separate: bool,
    counts: tuple[int, int, int],
    summaries: Sequence[ChunkSummary] = (),
) -> Window:
    """The messages of ``shown`` turns, ``lead`` ahead of the first user text (as its own
    part when ``separate``)."""
    messages: list[Message] = []
    for i, (user, assistant) in enumerate(shown):
        parts: tuple[Text, ...] = (Text(text=user),)
        if i == 0 and lead:
            lead_text = "\n\n".join(lead)
            parts = (
                (Text(text=lead_text), Text(text=user))
                if separate
                else (Text(text="\n\n".join([lead_text, user])),)
            )
        messages.append(Message(role="user", parts=parts))
        messages.append(Message(role="assistant", parts=(Text(text=assistant),)))
    tokens = sum(count_tokens(m.text) for m in messages)
    l1, l2, omitted = counts
    return Window(
        messages=messages,
        turns_included=kept,
        tokens=tokens,
        l1=l1,
        l2=l2,
        omitted=omitted,
        summaries=tuple(summaries),
    )


def _anchored(
    turns: Sequence[TurnRecord],
    budget: int,
    chunks: Sequence[ChunkSummary],
    first_position: int,
    older: int,
    chunk_turns: int,
    anchor_at: int | None = None,
) -> Window | None:
    """The window by the anchored rule; None when the sliding rule applies."""
    count = first_position - 1 + len(turns)
    costs = [turn_tokens(t) for t in reversed(turns)]
    start = anchor_at
    if start is None:
        start = anchor(count, costs, budget, chunk_turns=chunk_turns, chunks=chunks)
    if not start:
        return None
    # A caller passing fewer turns than the rule keeps gets those (never an IndexError).
    start = max(start, first_position)
    shown = [render_turn(t) for t in turns[start - first_position :]]
    lead: list[str] = []
    counts = (0, 0, 0)
    summaries: list[ChunkSummary] = []
    if start > 1:
        share = budget // SUMMARY_SHARE
        summaries, _, uncovered = pick_summaries(
            chunks, start - 1, max(0, share - _OMISSION_RESERVE)
        )
        lead, counts = _lead(summaries, uncovered - first_position + 1 + older)
    return _window(shown, lead, len(shown), separate=True, counts=counts, summaries=summaries)


def _lead(
    summaries: Sequence[ChunkSummary], omitted: int
) -> tuple[list[str], tuple[int, int, int]]:
    """The older material's lines and its (level-1, level-2, omitted) counts."""
    lead = [omission(omitted)] if omitted > 0 else []
    lead += [summary_text(c) for c in summaries]
    l1 = sum(1 for c in summaries if c.level == 1)
    return lead, (l1, len(summaries) - l1, max(0, omitted))
