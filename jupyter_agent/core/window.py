"""The boot window (pure): a chat's previous turns as messages, within a token budget.

:func:`boot_window` renders the chat's earlier turns (oldest first in ``turns``) as
user/assistant message pairs: the user's text and steering, then the replies the user saw
(progress bubbles and the final reply); an interrupted turn says so in a short marker.

Walking back from the NEWEST turn, turns are kept at full resolution while they fit
``budget_tokens`` (counted by :func:`jupyter_agent.core.tokens.count_tokens`). Older turns
are then represented by chunk summaries when given: level-1 summaries first, and once a
level-1 no longer fits, level-2 summaries, each replacing the level-1 summaries it spans
(resolution only decreases going back). Turns
neither shown nor summarised are named by one line ("N earlier turns ... not shown").
All of that older material leads the first user message. If even the newest turn alone
does not fit, it is shown clipped (head and tail kept) so the window is never empty.

Turn positions (``ChunkSummary.first_turn``/``last_turn``) are 1-based positions of turns
in the chat; ``turns[0]`` is at position ``first_position`` (1 unless the caller passes a
tail of the chat). The messages start with a user message and alternate roles; they end
with an assistant message when at least one turn is shown in full. The caller passes
``budget_tokens = min(configured, context_window // 4)``.

The window in O(window) (``toolcaller@v3``): the store reads only the newest turns the
window can use, :func:`tail_size` deciding from their costs (:func:`turn_tokens`, newest
first) how many :func:`boot_window` keeps, and hands them back as a :class:`HistoryWindow`
(those turns and the count of the older ones). ``boot_window(w.turns, older=w.omitted,
first_position=w.omitted + 1)`` then builds exactly the window the whole list would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_agent.core.tokens import chars_for_tokens, count_tokens
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.messages import Message, Text

__all__ = [
    "ChunkSummary",
    "HistoryWindow",
    "Window",
    "boot_window",
    "render_turn",
    "tail_size",
    "turn_tokens",
    "window_record",
]

_OMISSION_RESERVE = 24  # tokens kept free for the "N earlier turns" line


@dataclass(frozen=True)
class ChunkSummary:
    """A summary of turns ``first_turn``..``last_turn`` (1-based positions, inclusive)."""

    level: Literal[1, 2]
    first_turn: int
    last_turn: int
    text: str


@dataclass(frozen=True)
class Window:
    """The boot window: its messages, how many turns are in full, and its token count."""

    messages: list[Message] = field(default_factory=list)
    turns_included: int = 0
    tokens: int = 0


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


def tail_size(costs: Sequence[int], budget_tokens: int, *, complete: bool) -> int | None:
    """How many of the newest turns :func:`boot_window` keeps (in full or clipped).

    ``costs``: the :func:`turn_tokens` of the chat's newest turns, newest first;
    ``complete``: they are all of the chat's turns. None when that cannot be told yet
    (every cost so far fits: the caller reads older turns and asks again).
    """
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


@dataclass(frozen=True, kw_only=True)
class HistoryWindow:
    """The history a ``toolcaller@v3`` run reads: the newest turns its window can use
    (oldest first), how many older turns there are (``omitted``), and the chunk summaries
    of positions before those turns the window may use (``chunks``, oldest first).

    JSON: ``{"turns": [window records], "omitted": N, "chunks": [{level, first_turn,
    last_turn, text}]}``; readers ignore keys they do not know, and a result without
    ``chunks`` (a log recorded before issue 14) reads as no summaries. A window record is
    a turn record holding only what the window renders (``id``, ``userText``,
    ``steering``, ``replies``, ``interrupted``, ``created``, ``llm.stopReason``,
    ``llm.endCause``): the ids of its chat and run, its model, usage, cost and fingerprints
    (about four fifths of a short turn's record) would only grow the run's log.
    """

    turns: tuple[TurnRecord, ...] = ()
    omitted: int = 0
    chunks: tuple[ChunkSummary, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": [window_record(t) for t in self.turns],
            "omitted": self.omitted,
            "chunks": [
                {
                    "level": c.level,
                    "first_turn": c.first_turn,
                    "last_turn": c.last_turn,
                    "text": c.text,
                }
                for c in self.chunks
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> HistoryWindow:
        """The window of a recorded result (None or a non-object: an empty one)."""
        if not isinstance(data, dict):
            return cls()
        turns = tuple(
            TurnRecord.from_json({"chat_id": "", "run_id": "", **t})
            for t in data.get("turns") or ()
        )
        omitted = data.get("omitted")
        chunks = tuple(
            ChunkSummary(
                level=2 if c.get("level") == 2 else 1,
                first_turn=c["first_turn"],
                last_turn=c["last_turn"],
                text=str(c.get("text") or ""),
            )
            for c in data.get("chunks") or ()
            # An item this version cannot read is dropped: it only costs resolution.
            if isinstance(c, dict)
            and isinstance(c.get("first_turn"), int)
            and isinstance(c.get("last_turn"), int)
        )
        return cls(turns=turns, omitted=omitted if isinstance(omitted, int) else 0, chunks=chunks)


_WINDOW_KEYS = ("id", "userText", "steering", "replies", "interrupted", "created")


def window_record(turn: TurnRecord) -> dict[str, Any]:
    """The JSON of ``turn`` reduced to what :func:`render_turn` reads (see HistoryWindow)."""
    full = turn.to_json()
    record = {key: full[key] for key in _WINDOW_KEYS}
    llm = full["llm"]
    record["llm"] = {"stopReason": llm["stopReason"], "endCause": llm["endCause"]}
    return record


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


def _pick_summaries(
    chunks: Sequence[ChunkSummary], position: int, budget: int
) -> tuple[list[ChunkSummary], int, int]:
    """Summaries covering positions ``position`` and older, newest first, within ``budget``.

    Returns (summaries oldest first, tokens used, the newest position left uncovered).
    """
    picked: list[ChunkSummary] = []
    level = 1
    while position >= 1:
        choice: ChunkSummary | None = None
        for want in (1, 2) if level == 1 else (2,):
            covering = [
                c for c in chunks if c.level == want and c.first_turn <= position <= c.last_turn
            ]
            # The chunk reaching furthest back covers the most with one summary.
            covering.sort(key=lambda c: (c.first_turn, -c.last_turn))
            if not covering:
                continue
            candidate = covering[0]
            # A level-2 summary supersedes the level-1 summaries it spans.
            kept = [c for c in picked if not _inside(c, candidate)]
            if _cost(kept) + _cost([candidate]) <= budget:
                choice, picked, level = candidate, kept, want
                break
        if choice is None:
            break
        picked.append(choice)
        position = choice.first_turn - 1
    picked.reverse()
    return picked, _cost(picked), position


def _inside(inner: ChunkSummary, outer: ChunkSummary) -> bool:
    return outer.first_turn <= inner.first_turn and inner.last_turn <= outer.last_turn


def _cost(summaries: Sequence[ChunkSummary]) -> int:
    return sum(count_tokens(_summary_text(c)) for c in summaries)


def _summary_text(chunk: ChunkSummary) -> str:
    span = (
        f"turn {chunk.first_turn}"
        if chunk.first_turn == chunk.last_turn
        else f"turns {chunk.first_turn}-{chunk.last_turn}"
    )
    return f"[summary of {span}] {chunk.text.strip()}"


def _omission(count: int) -> str:
    noun = "turn" if count == 1 else "turns"
    return f"[{count} earlier {noun} of this chat are not shown]"


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
) -> Window:
    """The chat's earlier turns as messages within ``budget_tokens`` (see module docstring).

    ``older``: how many turns of the chat precede ``turns[0]`` and were not passed (a
    :class:`HistoryWindow`'s ``omitted``); they count as not shown.
    """
    if not turns or budget_tokens <= 0:
        return Window()
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
    if older_count or older:
        newest_older = first_position + older_count - 1
        summaries, s_used, uncovered = _pick_summaries(
            chunks, newest_older, budget_tokens - used - _OMISSION_RESERVE
        )
        omitted = uncovered - first_position + 1 + older
        if omitted > 0:
            lead.append(_omission(omitted))
        lead += [_summary_text(c) for c in summaries]
        used += s_used

    shown = rendered[len(rendered) - kept :]
    if clipped is not None:
        shown = [clipped]
    messages: list[Message] = []
    for i, (user, assistant) in enumerate(shown):
        if i == 0 and lead:
            user = "\n\n".join([*lead, user])
        messages.append(Message(role="user", parts=(Text(text=user),)))
        messages.append(Message(role="assistant", parts=(Text(text=assistant),)))
    tokens = sum(count_tokens(m.text) for m in messages)
    return Window(messages=messages, turns_included=kept, tokens=tokens)
