"""The history a run reads (pure): :class:`HistoryWindow`, the answer to ``config.get
{key: "history", budget_tokens}`` (``toolcaller@v3`` on) as the run's log records it: the
newest turns the boot window (:mod:`jupyter_agent.core.history.window`) can use, reduced to
what it renders (:func:`window_record`), the count of the older ones, the summaries it may
use and the host's layout. Built by the store, read by the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_agent.core.history.pick import ChunkSummary
from jupyter_agent.core.turns import TurnRecord

__all__ = ["HistoryWindow", "window_record"]


@dataclass(frozen=True, kw_only=True)
class HistoryWindow:
    """The history a ``toolcaller@v3`` run reads: the newest turns its window can use
    (oldest first), how many older turns there are (``omitted``) and the summaries of
    positions before those turns the window may use (``chunks``, oldest first).

    JSON: ``{"turns": [window records], "omitted": N, "chunks": [{level, first_turn,
    last_turn, text}], "layout": {chunk_turns, l2_chunks}}`` (``chunks`` absent when empty,
    ``layout`` absent from older hosts' records: then the sliding rule); readers ignore
    keys they do not know, so later versions may add some. A window record is a turn
    record holding only what the window renders (``id``, ``userText``, ``steering``,
    ``replies``, ``interrupted``, ``created``, ``llm.stopReason``, ``llm.endCause``): the
    ids of its chat and run, its model, usage, cost and fingerprints (about four fifths of
    a short turn's record) would only grow the run's log.
    """

    turns: tuple[TurnRecord, ...] = ()
    omitted: int = 0
    chunks: tuple[ChunkSummary, ...] = ()
    #: ``{chunk_turns, l2_chunks}`` of the host: the window is anchored.
    layout: dict[str, int] | None = None
    #: With ``layout``: the first raw position the host chose (0: the sliding rule), over
    #: all of the chat's summaries; ``chunks`` then holds only the ones shown.
    anchor: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "turns": [window_record(t) for t in self.turns],
            "omitted": self.omitted,
        }
        if self.chunks:
            out["chunks"] = [
                {
                    "level": c.level,
                    "first_turn": c.first_turn,
                    "last_turn": c.last_turn,
                    "text": c.text,
                }
                for c in self.chunks
            ]
        if self.layout is not None:
            out["layout"] = dict(self.layout)
        if self.anchor is not None:
            out["anchor"] = self.anchor
        return out

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
        chunks = tuple(c for c in map(_chunk_from_json, data.get("chunks") or ()) if c)
        anchor = data.get("anchor")
        return cls(
            turns=turns,
            omitted=omitted if isinstance(omitted, int) else 0,
            chunks=chunks,
            layout=_layout_from_json(data.get("layout")),
            anchor=anchor if isinstance(anchor, int) and not isinstance(anchor, bool) else None,
        )


def _layout_from_json(data: Any) -> dict[str, int] | None:
    """``{chunk_turns, l2_chunks}`` of a recorded window (None when absent or unreadable)."""
    if not isinstance(data, dict):
        return None
    layout = {k: data.get(k) for k in ("chunk_turns", "l2_chunks")}
    if all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in layout.values()):
        return {k: int(v) for k, v in layout.items() if isinstance(v, int)}
    return None


def _chunk_from_json(data: Any) -> ChunkSummary | None:
    """A summary of a recorded window (None for an item this code cannot read)."""
    if not isinstance(data, dict):
        return None
    first, last, text = data.get("first_turn"), data.get("last_turn"), data.get("text")
    if not (isinstance(first, int) and isinstance(last, int) and isinstance(text, str)):
        return None
    return ChunkSummary(
        level=2 if data.get("level") == 2 else 1, first_turn=first, last_turn=last, text=text
    )


_WINDOW_KEYS = ("id", "userText", "steering", "replies", "interrupted", "created")


def window_record(turn: TurnRecord) -> dict[str, Any]:
    """The JSON of ``turn`` reduced to what
    :func:`~jupyter_agent.core.history.window.render_turn` reads (see HistoryWindow)."""
    full = turn.to_json()
    record = {key: full[key] for key in _WINDOW_KEYS}
    llm = full["llm"]
    record["llm"] = {"stopReason": llm["stopReason"], "endCause": llm["endCause"]}
    return record
