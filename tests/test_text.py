"""``jupyter_agent.text``: lone surrogates found (with their path) and repaired."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.text import (
    REPLACEMENT,
    StreamRepair,
    has_lone_surrogate,
    lone_surrogate,
    repair,
    repair_json,
)

FOUND = [
    ({"a": 1, "text": "a\ud800b"}, ("text", "\\ud800")),
    ({"view": {"path": "x", "cell": "\udc00"}}, ("view.cell", "\\udc00")),
    ({"attachments": ["ok", "\ud83d"]}, ("attachments[1]", "\\ud83d")),
    ({"tiers": {"co\ud800": None}}, ("tiers.co\\ud800", "\\ud800")),
    ({"k\udfff": "\ud800"}, ("k\\udfff", "\\udfff")),  # the key is reported before its value
    ("\ud800", ("(body)", "\\ud800")),
    ({"a": ["b", {"c": ("d", "ok")}]}, None),
    ({"emoji": "\U0001f600", "n": [1, 2.5, None, True]}, None),
]


@pytest.mark.parametrize(("value", "expected"), FOUND)
def test_lone_surrogate_names_the_first_string(value: Any, expected: Any) -> None:
    assert lone_surrogate(value) == expected


def test_repair_joins_pairs_and_replaces_lone_halves() -> None:
    assert repair("a\ud83d\ude00b") == "a\U0001f600b"
    assert repair("\ud83d x \ude00") == f"{REPLACEMENT} x {REPLACEMENT}"
    valid = "plain \U0001f600"
    assert repair(valid) is valid
    assert not has_lone_surrogate(repair("\udbff\udbff"))


def test_repair_json_copies_only_when_needed() -> None:
    clean: dict[str, Any] = {"a": [1, "b", {"c": None}]}
    assert repair_json(clean) is clean
    dirty = {"a": ["x", {"b\udc00": ("\ud83d", 1.5)}], "z": True}
    assert repair_json(dirty) == {"a": ["x", {f"b{REPLACEMENT}": [REPLACEMENT, 1.5]}], "z": True}
    assert list(repair_json(dirty)) == ["a", "z"]  # key order kept


def test_deep_values_never_recurse() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    assert lone_surrogate(deep) is None
    inner.append("\ud800")
    found = lone_surrogate(deep)
    assert found is not None
    assert found[0].endswith("[0][0]")
    fixed = repair_json(deep)
    for _ in range(100_000):
        fixed = fixed[0]
    assert fixed == [REPLACEMENT]


def test_stream_repair_holds_a_high_half_for_the_next_piece() -> None:
    stream = StreamRepair()
    pieces = [stream.feed(p) for p in ("a\ud83d", "\ude00b", "\ud83d", "c", "\ud83d")]
    assert pieces == ["a", "\U0001f600b", "", f"{REPLACEMENT}c", ""]
    assert stream.flush() == REPLACEMENT
    assert stream.flush() == ""
