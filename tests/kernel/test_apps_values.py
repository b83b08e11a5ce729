"""In-process parts of the kernel: the values store, app proxies' binding, arg summaries."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.digest.cells import AppCallRecord
from jupyter_agent.exceptions import AppCallError
from jupyter_agent.kernel.apps import build_apps, make_batch, summarize_args
from jupyter_agent.kernel.values import ValueNotFound, Values


class _Channel:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.records: list[AppCallRecord] = []

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(payload)
        if payload["jupyter_agent"] == "batch":
            return {
                "results": [
                    {"ok": True, "value": i, "seq": i} for i in range(len(payload["items"]))
                ]
            }
        return {"ok": True, "value": "v", "seq": 1, "mutation": False}

    def record(self, record: AppCallRecord) -> None:
        self.records.append(record)

    def next_batch(self) -> int:
        return 1


def test_values_get():
    values = Values()
    values.store("c1", ["a", "b"], last={"k": 1}, has_last=True)
    values.store("c2", [], has_last=False)
    assert values.get("c1", 2) == "b"
    assert values.get("c1") == {"k": 1}
    for cell, index in (("c3", 1), ("c1", 0), ("c1", 3), ("c2", "last"), ("c1", "2")):
        with pytest.raises(ValueNotFound):
            values.get(cell, index)
    assert values.cells() == ["c1", "c2"]


def test_proxy_binds_catalogue_signature_with_defaults():
    channel = _Channel()
    apps = build_apps(channel)
    assert apps["llm"].chat("hi", system="s") == "v"
    assert channel.requests == [
        {
            "jupyter_agent": "app",
            "app": "llm",
            "method": "chat",
            "args": {"messages": "hi", "tier": "classify", "system": "s"},
        }
    ]
    with pytest.raises(TypeError, match=r"llm\.chat"):
        apps["llm"].chat()
    with pytest.raises(TypeError, match="JSON"):
        apps["chat"].post(object())
    with pytest.raises(AttributeError):
        apps["chat"].delete  # noqa: B018  # not in the catalogue


def test_batch_shapes_and_unknown_method():
    channel = _Channel()
    apps = build_apps(channel)
    batch = make_batch(channel)
    results = batch([apps["llm"].chat.spec("a"), ("chat", "post", {"text": "t"})])
    assert [r.value for r in results] == [0, 1]
    assert [r.batch for r in channel.records] == [1, 1]
    assert len(channel.requests) == 1
    with pytest.raises(AppCallError, match="no app method"):
        batch(("chat", "nope", {}))


def test_summarize_args_is_bounded():
    summary = summarize_args({"messages": "x" * 5000, "items": list(range(100))})
    assert summary["messages"].endswith("(5000 chars)")
    assert len(summary["messages"]) < 300
    assert len(summary["items"]) == 21
