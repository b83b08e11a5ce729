"""The handlers' parsing helpers (server/parse.py): typed values out, or a BadRequest whose
message names the field and whose reason is the caller's."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.exceptions import BadRequest, PayloadTooLarge
from jupyter_agent.runtime.runs.chat_service import Control, View
from jupyter_agent.server import parse


def _bad(call: Any, *args: Any, **kwargs: Any) -> BadRequest:
    with pytest.raises(BadRequest) as info:
        call(*args, **kwargs)
    return info.value


def test_json_object() -> None:
    assert parse.json_object(b"", limit=10) == {}
    assert parse.json_object(b"  \n", limit=10) == {}
    assert parse.json_object(b'{"a": 1}', limit=10) == {"a": 1}
    for body in (b"{oops", b'"text"', b"[1]", b"\xff\xfe"):
        error = _bad(parse.json_object, body, limit=100)
        assert error.reason == "bad_json", body
    with pytest.raises(PayloadTooLarge) as info:
        parse.json_object(b'{"a": "0123456789"}', limit=10)
    assert info.value.reason == "body_too_large"
    assert "19 bytes" in info.value.message
    assert "10 bytes" in info.value.message


def test_string_optional_and_required() -> None:
    assert parse.string({}, "text", reason="bad_text", default="") == ""
    assert parse.string({"text": None}, "text", reason="bad_text", default="") == ""
    assert parse.string({"text": "hi"}, "text", reason="bad_text", default="") == "hi"
    for body in ({"text": 3}, {"text": ["a"]}, {"text": True}):
        error = _bad(parse.string, body, "text", reason="bad_text", default="")
        assert (error.reason, error.message) == ("bad_text", "'text' must be a string")
    # Required: absent is refused with the same words.
    error = _bad(parse.string, {}, "title", reason="bad_title")
    assert (error.reason, error.message) == ("bad_title", "'title' must be a string")
    assert parse.optional_string({}, "path", reason="bad_path") is None
    assert parse.optional_string({"path": "a.ipynb"}, "path", reason="bad_path") == "a.ipynb"
    assert "'path'" in _bad(parse.optional_string, {"path": 3}, "path", reason="bad_path").message


def test_flag() -> None:
    assert parse.flag({}, "hard", reason="bad_hard") is False
    assert parse.flag({"hard": True}, "hard", reason="bad_hard") is True
    for value in ("yes", 1, 0, [], {}):
        error = _bad(parse.flag, {"hard": value}, "hard", reason="bad_hard")
        assert (error.reason, error.message) == ("bad_hard", "'hard' must be true or false")


def test_string_list_mapping_and_only_keys() -> None:
    assert parse.string_list({}, "attachments", reason="r") == []
    assert parse.string_list({"attachments": ["a", "b"]}, "attachments", reason="r") == ["a", "b"]
    for value in ("a.txt", [1], ["a", None], {"a": 1}):
        error = _bad(
            parse.string_list,
            {"attachments": value},
            "attachments",
            reason="bad_attachments",
            what="contents paths",
        )
        assert error.reason == "bad_attachments"
        assert error.message == "'attachments' must be a list of contents paths"
    assert parse.mapping({}, "tiers", reason="bad_settings") == {}
    assert parse.mapping({"tiers": {"a": None}}, "tiers", reason="bad_settings") == {"a": None}
    error = _bad(parse.mapping, {"tiers": []}, "tiers", reason="bad_settings")
    assert (error.reason, error.message) == ("bad_settings", "'tiers' must be an object")
    parse.only_keys({"tiers": {}}, ("tiers",), reason="bad_settings")
    error = _bad(
        parse.only_keys,
        {"tiers": {}, "pool_size": 9, "db_url": "x"},
        ("tiers",),
        reason="bad_settings",
        what="setting",
        doing="changed here",
    )
    assert error.reason == "bad_settings"
    assert error.message == "unknown setting(s) db_url, pool_size: only 'tiers' can be changed here"


def test_control_and_view() -> None:
    assert parse.control({}) is None
    assert parse.control({"control": {"kind": "break"}}) == Control(hard=False)
    assert parse.control({"control": {"kind": "break", "hard": True}}) == Control(hard=True)
    for value, field in (
        ({"kind": "stop"}, "'control'"),
        ("break", "'control'"),
        ({"kind": "break", "hard": "yes"}, "'control.hard'"),
    ):
        error = _bad(parse.control, {"control": value})
        assert error.reason == "bad_control"
        assert field in error.message
    assert parse.view({}) is None
    assert parse.view({"view": {"path": "a.ipynb", "cell": 2, "selection": None}}) == View(
        path="a.ipynb", cell=2
    )
    for value, field in (
        ("nb.ipynb", "'view'"),
        ({"path": 3}, "'view.path'"),
        ({"cell": True}, "'view.cell'"),
        ({"colour": "red"}, "'colour'"),
    ):
        error = _bad(parse.view, {"view": value})
        assert error.reason == "bad_view"
        assert field in error.message


class _Query:
    def __init__(self, **args: str) -> None:
        self.args = args

    def get_query_argument(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)


def test_query_arguments() -> None:
    assert parse.query_int(_Query(), "limit", reason="bad_limit", default=50) == 50
    assert parse.query_int(_Query(limit="7"), "limit", reason="bad_limit", default=50) == 7
    error = _bad(parse.query_int, _Query(limit="ten"), "limit", reason="bad_limit", default=50)
    assert (error.reason, error.message) == ("bad_limit", "'limit' must be an integer, not 'ten'")
    assert parse.query_flag(_Query(full="1"), "full") is True
    assert parse.query_flag(_Query(full="yes"), "full") is True
    assert parse.query_flag(_Query(full="0"), "full") is False
    assert parse.query_flag(_Query(), "full") is False


def test_json_object_refuses_what_no_store_holds() -> None:
    cases = [
        (b'{"a": ' + b"1" * 5000 + b"}", "bad_json", "Invalid JSON body: an integer has more"),
        (b'{"a": {"b": [NaN]}}', "bad_json", "Invalid JSON body: NaN is not a JSON number"),
        (b'{"a": -Infinity}', "bad_json", "Invalid JSON body: -Infinity is not a JSON number"),
        (b'{"a": {"to": 9223372036854775808}}', "bad_json", "'a.to' is out of range"),
        (b'{"a": [-9223372036854775809]}', "bad_json", "'a[0]' is out of range"),
        (b'{"a": 1e400}', "bad_json", "'a' is out of range"),
        (b'{"title": "x\\u0000"}', "bad_unicode", "'title' holds a NUL character (\\u0000)"),
        (b'{"v": {"k\\u0000": 1}}', "bad_unicode", "'v.k\\u0000' holds a NUL character"),
    ]
    for body, reason, start in cases:
        error = _bad(parse.json_object, body, limit=100_000)
        assert error.reason == reason, body
        assert error.message.startswith(start), error.message
    edge = b'{"a": [9223372036854775807, -9223372036854775808, 1.5e300, "\\u0001"]}'
    assert parse.json_object(edge, limit=100) == {"a": [2**63 - 1, -(2**63), 1.5e300, "\x01"]}


def test_integer_and_query_int_ranges() -> None:
    assert parse.integer({}, "to", reason="r", minimum=1, maximum=9) is None
    assert parse.integer({"to": 9}, "to", reason="r", minimum=1, maximum=9) == 9
    for value in (0, 10, True, 2.0, "3"):
        error = _bad(parse.integer, {"to": value}, "to", reason="r", minimum=1, maximum=9)
        assert (error.reason, error.message) == ("r", "'to' must be an integer from 1 to 9")

    class Args:
        def __init__(self, **values: str) -> None:
            self.values = values

        def get_query_argument(self, name: str, default: Any = None) -> Any:
            return self.values.get(name, default)

    assert parse.query_int(Args(), "limit", reason="r", default=5) == 5
    assert parse.query_int(Args(limit="7"), "limit", reason="r", default=5) == 7
    for raw in ("9" * 5000, str(2**63), "x"):
        error = _bad(parse.query_int, Args(limit=raw), "limit", reason="bad_limit", default=5)
        assert error.reason == "bad_limit"
        assert len(error.message) < 300
    error = _bad(parse.query_int, Args(n="0"), "n", reason="r", default=1, minimum=1, maximum=3)
    assert error.message == "'n' must be an integer from 1 to 3, not '0'"


@pytest.mark.parametrize("text", ["a\x00b", "a\ud800b"])
def test_mcp_tool_arguments_refuse_what_rest_refuses(text: str) -> None:
    from jupyter_agent.server.mcp.schemas import Args

    with pytest.raises(BadRequest) as info:
        Args("chat", {"text": text}).string("text")
    assert info.value.reason == "bad_unicode"
    assert Args("chat", {"text": "fine"}).string("text") == "fine"
