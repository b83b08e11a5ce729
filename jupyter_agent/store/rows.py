"""Rows of the agent database to and from the project's dataclasses (pure functions).

The columns are named after the fields (Python names), and a Usage is flattened into
``usage_<its wire key in snake case>``: the mapping follows from the types. Text reaching a
write is valid Unicode (a lone surrogate becomes U+FFFD, with a warning logged).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from sqlalchemy import Row

from jupyter_agent.codec import dump_dict, load, snake, wire_names
from jupyter_agent.core.turns import RunSummary, TurnLLM, TurnRecord
from jupyter_agent.messages import Usage
from jupyter_agent.store.tables import RUNS, TURNS
from jupyter_agent.text import has_lone_surrogate, repair

__all__ = [
    "RUN_COLUMNS",
    "Chat",
    "chat",
    "decode_cursor",
    "encode_cursor",
    "mail_row",
    "run_values",
    "summary",
    "turn_values",
    "valid",
]

# The repo's logger: these warnings are about its writes.
log = logging.getLogger("jupyter_agent.store.repo")


@dataclass(frozen=True, kw_only=True)
class Chat:
    """A chat as the REST API shows it."""

    id: str
    title: str
    created: str
    updated: str
    active_run_id: str | None = None
    #: The agent the chat talks to ("agent" for chats made before).
    agent: str = "agent"
    #: Whose chat it is ("" = the server's user).
    owner: str = ""
    #: ``{"chat_id", "turn"}``: the chat and turn this one was forked from (None: not a fork).
    forked_from: dict[str, Any] | None = None
    #: The chat's model over its agent's codegen tier: a tier name or a model name (None:
    #: the agent's codegen tier).
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


_USAGE_COLUMNS: Final = {name: "usage_" + snake(key) for name, key in wire_names(Usage).items()}
_TURN_COLUMN_NAMES: Final = frozenset(TURNS.c.keys())
RUN_COLUMNS: Final = tuple(RUNS.c)


def _columns(value: TurnLLM | TurnRecord | RunSummary) -> dict[str, Any]:
    """The value's passed fields by name, its Usage as ``usage_*`` columns."""
    out = {f.name: getattr(value, f.name) for f in fields(value) if f.init}
    usage = out.pop("usage", None)
    if isinstance(usage, Usage):
        out.update({column: getattr(usage, name) for name, column in _USAGE_COLUMNS.items()})
    return out


def chat(row: Mapping[Any, Any]) -> Chat:
    """A ``chats`` row (a Core row's ``_mapping``, or the values written) as a Chat."""
    values = dict(row)
    origin = values.get("forked_from")
    try:
        values["forked_from"] = json.loads(origin) if isinstance(origin, str) else None
    except ValueError:  # not ours: shown as no origin
        values["forked_from"] = None
    return load(Chat, values, by_name=True)


def valid(text: str, what: str) -> str:
    fixed = repair(text)
    if fixed is not text:
        log.warning("%s held a lone surrogate: stored with U+FFFD", what)
    return fixed


def turn_values(turn: TurnRecord) -> dict[str, Any]:
    # The projection: every column named like a field of the turn or of its llm.
    values = {**_columns(turn.llm), **_columns(turn)}
    values["fingerprint_system"] = turn.llm.fingerprints.get("system")
    values["fingerprint_identity"] = turn.llm.fingerprints.get("identity")
    values["record"] = json.dumps(turn.to_json(), ensure_ascii=False, separators=(",", ":"))
    # One search of the record covers every column: each is a field of the record. (Its
    # surrogates are raw characters, not escapes, so repairing the text repairs the JSON.)
    if has_lone_surrogate(values["record"]):
        log.warning("turn %s held a lone surrogate: stored with U+FFFD", turn.id)
        values = {k: repair(v) if isinstance(v, str) else v for k, v in values.items()}
    return {name: value for name, value in values.items() if name in _TURN_COLUMN_NAMES}


def mail_row(chat_id: str, item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(item["id"]),
        "chat_id": chat_id,
        "created": str(item.get("at") or ""),
        "item": json.dumps(dict(item), ensure_ascii=False, separators=(",", ":")),
    }


def run_values(summary: RunSummary) -> dict[str, Any]:
    values = _columns(summary)
    values["programs"] = json.dumps(list(summary.programs), separators=(",", ":"))
    return {
        k: valid(v, f"run {summary.run_id}") if isinstance(v, str) else v for k, v in values.items()
    }


def summary(row: Row[Any]) -> RunSummary:
    values = dict(zip(row._fields, row, strict=True))  # the cheapest named view of a Row
    values["usage"] = {name: values.pop(column) for name, column in _USAGE_COLUMNS.items()}
    values["programs"] = _programs(values.get("programs"))
    return load(RunSummary, values, by_name=True)


def _programs(raw: Any) -> list[str]:
    """The stored JSON list of refs (``[]`` for a value that is not one)."""
    try:
        found = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else []


def encode_cursor(started: str, run_id: str) -> str:
    raw = json.dumps([started, run_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        started, run_id = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a runs cursor: {cursor[:80]!r}") from exc
    if not isinstance(started, str) or not isinstance(run_id, str):
        raise ValueError(f"not a runs cursor: {cursor[:80]!r}")
    return started, run_id
