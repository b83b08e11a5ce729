"""The recorded host of an exported notebook: matching, cycling, batches, misses."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.exceptions import AppCallError
from jupyter_agent.kernel.recorded import NotAnAgentKernel, RecordedHost, play_recorded


def _call(app: str, method: str, args: dict[str, Any], value: Any, seq: int) -> dict[str, Any]:
    reply = {"ok": True, "value": value, "error": None, "seq": seq, "mutation": False}
    return {"app": app, "method": method, "args": args, "reply": reply}


CALLS = [
    _call("notebook", "read", {"path": "a.ipynb"}, {"path": "a.ipynb"}, 3),
    _call("notebook", "read", {"path": "b.ipynb"}, {"path": "b.ipynb"}, 5),
    _call("memory", "search", {"query": "x", "k": 5}, ["hit"], 7),
]


def _app(host: RecordedHost, app: str, method: str, args: dict[str, Any]) -> dict[str, Any]:
    return host.request({"jupyter_agent": "app", "app": app, "method": method, "args": args})


def test_same_arguments_first_whatever_the_order() -> None:
    host = RecordedHost(CALLS, [])
    assert _app(host, "notebook", "read", {"path": "b.ipynb"})["seq"] == 5
    assert _app(host, "notebook", "read", {"path": "a.ipynb"})["seq"] == 3
    # canonical JSON: the key order of the arguments does not matter
    assert _app(host, "memory", "search", {"k": 5, "query": "x"})["value"] == ["hit"]


def test_other_arguments_take_the_first_unused_of_the_method() -> None:
    host = RecordedHost(CALLS, [])
    assert _app(host, "notebook", "read", {"path": "a.ipynb"})["seq"] == 3
    assert _app(host, "notebook", "read", {"path": "edited.ipynb"})["seq"] == 5


def test_all_used_cycles_from_the_first() -> None:
    host = RecordedHost(CALLS, [])
    seqs = [_app(host, "notebook", "read", {"path": "a.ipynb"})["seq"] for _ in range(2)]
    assert seqs == [3, 5]  # the exact one, then the method's next unused one
    # a second top-to-bottom run answers as the first
    assert _app(host, "notebook", "read", {"path": "a.ipynb"})["seq"] == 3
    assert _app(host, "notebook", "read", {"path": "b.ipynb"})["seq"] == 5
    assert _app(host, "notebook", "read", {"path": "a.ipynb"})["seq"] == 3


def test_a_reply_is_a_copy() -> None:
    host = RecordedHost(CALLS, [])
    _app(host, "memory", "search", {"query": "x", "k": 5})["ok"] = False
    assert _app(host, "memory", "search", {"query": "x", "k": 5})["ok"] is True


def test_no_entry_is_a_clear_error() -> None:
    host = RecordedHost(CALLS, [])
    with pytest.raises(AppCallError, match=r"no recorded answer for llm\.chat in this notebook"):
        _app(host, "llm", "chat", {"messages": "hi"})


def test_a_batch_is_answered_item_by_item() -> None:
    host = RecordedHost(CALLS, [])
    items = [
        {"app": "memory", "method": "search", "args": {"query": "x", "k": 5}},
        {"app": "llm", "method": "chat", "args": {"messages": "hi"}},
        {"app": "notebook", "method": "read", "args": {"path": "b.ipynb"}},
    ]
    results = host.request({"jupyter_agent": "batch", "items": items})["results"]
    assert [r["ok"] for r in results] == [True, False, True]
    assert "no recorded answer for llm.chat" in results[1]["error"]
    assert results[2]["seq"] == 5


def test_cell_names_in_order_then_again() -> None:
    cells = [
        {"code": "x = 1", "name": "c1"},
        {"code": "print(x)", "name": "c2"},
        {"code": "x = 1", "name": "c3"},
    ]
    host = RecordedHost([], cells)
    assert host.cell_name("print(x)") == "c2"
    assert host.cell_name("x = 1") == "c1"
    assert host.cell_name("x = 1") == "c3"
    assert host.cell_name("x = 1") == "c1"  # a second run
    assert host.cell_name("x = 2") is None  # code the agent never ran


def test_play_recorded_outside_the_agent_kernel_says_so() -> None:
    with pytest.raises(NotAnAgentKernel, match="replay only in the agent kernel"):
        play_recorded({"calls": CALLS, "cells": []})
    with pytest.raises(NotAnAgentKernel):
        play_recorded('{"calls": [], "cells": []}')  # its JSON text is taken too


class _Kernelside:
    """The kernel's host channel as :class:`~jupyter_agent.kernel.kernel._StdinHost` is
    once a record is installed: requests go to the record."""

    def __init__(self, host: RecordedHost) -> None:
        self.host = host
        self.records: list[Any] = []

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.host.request(payload)

    def record(self, record: Any) -> None:
        self.records.append(record)

    def next_batch(self) -> int:
        return 1


def test_the_in_cell_apps_read_the_recorded_replies() -> None:
    import base64
    import pickle

    from jupyter_agent.kernel.apps import build_apps, make_batch
    from jupyter_agent.kernel.notebook_view import NotebookView

    fetched = _call("notebook", "fetch", {"name": "df", "path": None}, {"name": "df"}, 9)
    fetched["reply"]["payload"] = base64.b64encode(pickle.dumps({"a": [1, 2]})).decode()
    channel = _Kernelside(RecordedHost([*CALLS, fetched], []))
    apps = build_apps(channel)
    view = apps["notebook"].read("a.ipynb")
    assert isinstance(view, NotebookView)
    assert view.path == "a.ipynb"
    assert apps["notebook"].fetch("df") == {"a": [1, 2]}  # the carried copy, unpickled
    [hit] = make_batch(channel)(apps["memory"].search.spec("x", k=5))
    assert hit.unwrap() == ["hit"]
    assert [r.seq for r in channel.records] == [3, 9, 7]  # recorded as the run's calls
    with pytest.raises(AppCallError, match=r"no recorded answer for llm\.chat"):
        apps["llm"].chat("hello")
