"""Codec cost: the codec derived from the types vs the hand-written one it replaced.

Run: ``python bench/bench_codec.py``. For a TurnRecord, a Message and an LLMReply (the
golden files' real values) it times encode, decode and a round trip (encode + decode), and
the store's row mapping of a run summary; it prints old and new side by side and their
ratio. The old functions are kept here, and only here, copied from the commit before the
change, so the comparison stays possible. Compare the ratios, not absolute figures (shared
machines are noisy); the target is a round-trip ratio within ~1.5x.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.core.turns import Reply, RunSummary, Steering, TurnLLM, TurnRecord
from jupyter_agent.messages import (
    File,
    LLMReply,
    Message,
    Part,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    message_from_json,
    message_to_json,
    reply_from_json,
    reply_to_json,
)
from jupyter_agent.store import repo
from jupyter_agent.store.rows import summary

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden"

# --- the hand-written codec, as it was (messages.py, core/turns.py, store/repo.py) --------


def old_usage_to_json(usage: Usage) -> dict[str, int]:
    return {
        "in": usage.input_tokens,
        "out": usage.output_tokens,
        "cacheRead": usage.cache_read_tokens,
        "cacheWrite": usage.cache_write_tokens,
        "reasoning": usage.reasoning_tokens,
    }


def old_usage_from_json(data: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(data.get("in", 0)),
        output_tokens=int(data.get("out", 0)),
        cache_read_tokens=int(data.get("cacheRead", 0)),
        cache_write_tokens=int(data.get("cacheWrite", 0)),
        reasoning_tokens=int(data.get("reasoning", 0)),
    )


def old_part_to_json(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name, "args": part.args}
    if isinstance(part, ToolResult):
        return {
            "type": "tool_result",
            "call_id": part.call_id,
            "content": [old_part_to_json(p) for p in part.content],
            "is_error": part.is_error,
        }
    if isinstance(part, Thinking):
        out: dict[str, Any] = {"type": "thinking"}
        if part.text is not None:
            out["text"] = part.text
        if part.provider_state is not None:
            out["provider_state"] = part.provider_state
        return out
    if isinstance(part, File):
        out = {
            "type": "file",
            "media_type": part.media_type,
            "data": base64.b64encode(part.data).decode("ascii"),
        }
        if part.name is not None:
            out["name"] = part.name
        return out
    raise TypeError(f"not a message part: {type(part).__name__}")


def old_part_from_json(data: dict[str, Any]) -> Part:
    kind = data.get("type")
    if kind == "text":
        return Text(text=data["text"])
    if kind == "tool_call":
        return ToolCall(id=data["id"], name=data["name"], args=dict(data["args"]))
    if kind == "tool_result":
        content: list[Text | File] = []
        for item in data["content"]:
            part = old_part_from_json(item)
            if not isinstance(part, (Text, File)):
                raise ValueError("a tool result holds only text and file parts")
            content.append(part)
        return ToolResult(
            call_id=data["call_id"], content=tuple(content), is_error=bool(data["is_error"])
        )
    if kind == "thinking":
        return Thinking(text=data.get("text"), provider_state=data.get("provider_state"))
    if kind == "file":
        return File(
            media_type=data["media_type"],
            data=base64.b64decode(data["data"], validate=True),
            name=data.get("name"),
        )
    raise ValueError(f"unknown part type: {kind!r}")


def old_message_to_json(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [old_part_to_json(p) for p in message.parts]}


def old_message_from_json(data: dict[str, Any]) -> Message:
    role = data["role"]
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role: {role!r}")
    return Message(role=role, parts=tuple(old_part_from_json(p) for p in data["parts"]))


def old_reply_to_json(reply: LLMReply) -> dict[str, Any]:
    return {
        "parts": [old_part_to_json(p) for p in reply.parts],
        "stop": reply.stop,
        "usage": old_usage_to_json(reply.usage),
        "stop_detail": reply.stop_detail,
        "model": reply.model,
    }


def old_reply_from_json(data: dict[str, Any]) -> LLMReply:
    stop = data["stop"]
    if stop not in ("done", "tool", "length"):
        raise ValueError(f"unknown stop: {stop!r}")
    return LLMReply(
        parts=tuple(old_part_from_json(p) for p in data["parts"]),
        stop=stop,
        usage=old_usage_from_json(data.get("usage") or {}),
        stop_detail=data.get("stop_detail"),
        model=data.get("model"),
    )


def old_llm_to_json(llm: TurnLLM) -> dict[str, Any]:
    return {
        "stopReason": llm.stop_reason,
        "endCause": llm.end_cause,
        "modelCalls": llm.model_calls,
        "cells": llm.cells,
        "usage": old_usage_to_json(llm.usage),
        "cost": llm.cost,
        "fingerprints": dict(llm.fingerprints),
    }


def old_llm_from_json(data: dict[str, Any]) -> TurnLLM:
    return TurnLLM(
        stop_reason=data["stopReason"],
        end_cause=data["endCause"],
        model_calls=int(data.get("modelCalls", 0)),
        cells=int(data.get("cells", 0)),
        usage=old_usage_from_json(data.get("usage") or {}),
        cost=data.get("cost"),
        fingerprints=dict(data.get("fingerprints") or {}),
    )


def old_turn_to_json(turn: TurnRecord) -> dict[str, Any]:
    return {
        "id": turn.id,
        "chat_id": turn.chat_id,
        "run_id": turn.run_id,
        "userText": turn.user_text,
        "steering": [{"text": s.text, "at": s.at} for s in turn.steering],
        "replies": [{"text": r.text, "done": r.done} for r in turn.replies],
        "fromAgent": turn.from_agent,
        "traceRef": turn.trace_ref,
        "interrupted": turn.interrupted,
        "created": turn.created,
        "durationMs": turn.duration_ms,
        "model": turn.model,
        "llm": old_llm_to_json(turn.llm),
    }


def old_turn_from_json(data: dict[str, Any]) -> TurnRecord:
    return TurnRecord(
        id=data["id"],
        chat_id=data["chat_id"],
        run_id=data["run_id"],
        user_text=data["userText"],
        created=data["created"],
        llm=old_llm_from_json(data["llm"]),
        steering=tuple(Steering(text=s["text"], at=s["at"]) for s in data.get("steering", ())),
        replies=tuple(Reply(text=r["text"], done=r["done"]) for r in data.get("replies", ())),
        from_agent=data.get("fromAgent", "agent"),
        interrupted=bool(data.get("interrupted", False)),
        duration_ms=int(data.get("durationMs", 0)),
        model=data.get("model"),
    )


def old_summary(row: Any) -> RunSummary:
    """The hand-written mapping of the table's first 17 columns (those it had then; the
    columns added since are left at their defaults)."""
    (
        run_id, chat_id, program, status, started, ended, model, model_calls, cells,
        usage_in, usage_out, cache_read, cache_write, reasoning, cost, stop_reason, end_cause,
    ) = tuple(row)[:17]  # fmt: skip
    return RunSummary(
        run_id=run_id,
        chat_id=chat_id,
        program=program,
        status=status,
        started=started,
        ended=ended,
        model=model,
        model_calls=model_calls,
        cells=cells,
        usage=Usage(
            input_tokens=usage_in,
            output_tokens=usage_out,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
        ),
        cost=cost,
        stop_reason=stop_reason,
        end_cause=end_cause,
    )


# --- measuring ----------------------------------------------------------------------------


def _once(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return time.perf_counter() - t0


def compare(label: str, old: Callable[[], object], new: Callable[[], object], items: int) -> None:
    """Old and new timed in alternating rounds (so both see the same machine load); the
    best round of each, per value."""
    n, olds, news = 200, [], []
    for _ in range(15):
        olds.append(_once(old, n))
        news.append(_once(new, n))
    t_old, t_new = (min(t) / n / items * 1e6 for t in (olds, news))
    print(f"{label:<26} old {t_old:7.2f} us   new {t_new:7.2f} us   new/old {t_new / t_old:5.2f}")


def _rows() -> list[Any]:
    """Real ``agent_runs`` rows (SQLAlchemy Rows) of the golden run summaries."""
    import tempfile

    rest = json.loads((GOLDEN / "rest.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        store = repo.Store(f"sqlite:///{tmp}/agent.sqlite")
        for run in rest["runs"]:
            store.upsert_run(RunSummary.from_json(run))
        from sqlalchemy import select

        from jupyter_agent.store.rows import RUN_COLUMNS

        with store._read("bench") as conn:
            rows = list(conn.execute(select(*RUN_COLUMNS)))
        store.close()
    return rows


def main() -> None:
    rest = json.loads((GOLDEN / "rest.json").read_text())
    messages = json.loads((GOLDEN / "messages.json").read_text())
    turn_json = rest["turns"]
    turns = [TurnRecord.from_json(t) for t in turn_json]
    reply_json = messages["log_replies"] + messages["fixture_replies"]
    replies = [reply_from_json(r) for r in reply_json]
    msg_json = [m for m in messages["samples"] if "role" in m]
    msg_json += [{"role": "assistant", "parts": r["parts"]} for r in reply_json]
    msgs = [message_from_json(m) for m in msg_json]
    # the two codecs agree before they are timed
    assert [old_turn_to_json(t) for t in turns] == [t.to_json() for t in turns] == turn_json
    assert [old_message_to_json(m) for m in msgs] == [message_to_json(m) for m in msgs]
    assert [old_reply_to_json(r) for r in replies] == [reply_to_json(r) for r in replies]

    def each(fn: Callable[[Any], object], values: list[Any]) -> Callable[[], object]:
        return lambda: [fn(v) for v in values]

    print(f"per value; {len(turns)} turns, {len(msgs)} messages, {len(replies)} replies")
    n_turns = len(turns)
    compare(
        "TurnRecord encode", each(old_turn_to_json, turns), each(TurnRecord.to_json, turns), n_turns
    )
    compare(
        "TurnRecord decode",
        each(old_turn_from_json, turn_json),
        each(TurnRecord.from_json, turn_json),
        len(turns),
    )
    compare(
        "TurnRecord round trip",
        each(lambda t: old_turn_from_json(old_turn_to_json(t)), turns),
        each(lambda t: TurnRecord.from_json(t.to_json()), turns),
        len(turns),
    )
    compare(
        "Message encode", each(old_message_to_json, msgs), each(message_to_json, msgs), len(msgs)
    )
    compare(
        "Message decode",
        each(old_message_from_json, msg_json),
        each(message_from_json, msg_json),
        len(msgs),
    )
    compare(
        "Message round trip",
        each(lambda m: old_message_from_json(old_message_to_json(m)), msgs),
        each(lambda m: message_from_json(message_to_json(m)), msgs),
        len(msgs),
    )
    compare(
        "LLMReply round trip",
        each(lambda r: old_reply_from_json(old_reply_to_json(r)), replies),
        each(lambda r: reply_from_json(reply_to_json(r)), replies),
        len(replies),
    )
    rows = _rows()
    compare("RunSummary from a row", each(old_summary, rows), each(summary, rows), len(rows))


if __name__ == "__main__":
    main()
