"""The Anthropic adapter ends a cache breakpoint at the chat's earlier turns (issue 14)."""

from __future__ import annotations

from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.messages import Message, Text
from tests.llm.adapters_support import make_tier


def _messages() -> list[Message]:
    out: list[Message] = []
    for n in range(4):
        out.append(Message(role="user", parts=(Text(text=f"earlier question {n}"),)))
        out.append(Message(role="assistant", parts=(Text(text=f"earlier answer {n}"),)))
    out.append(Message(role="user", parts=(Text(text="now"),)))
    return out


def _marked(body: dict[str, object]) -> list[tuple[int, str]]:
    wire = body["messages"]
    assert isinstance(wire, list)
    return [
        (i, block["text"])
        for i, item in enumerate(wire)
        for block in item["content"]
        if "cache_control" in block
    ]


def test_the_history_end_gets_a_breakpoint_within_four() -> None:
    tier = make_tier("anthropic", "claude-sonnet-4-5")
    params = RequestParams(messages=_messages(), system="sys", tier=tier, history=8)
    body = build_request(params).json
    marked = _marked(body)
    assert (7, "earlier answer 3") in marked
    assert len(marked) + 1 <= 4  # the system block holds the other one
    # Without ``history`` (v1/v2) the request is as before: no breakpoint there.
    plain = build_request(RequestParams(messages=_messages(), system="sys", tier=tier)).json
    assert (7, "earlier answer 3") not in _marked(plain)
