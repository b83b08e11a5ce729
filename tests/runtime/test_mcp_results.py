"""An MCP tool result as the ``app.call`` value: each block bounded, and the whole."""

from __future__ import annotations

import base64
from types import SimpleNamespace

from jupyter_agent.runtime.mcp.results import (
    MAX_IMAGE_BYTES,
    MAX_TEXT_CHARS,
    MAX_TOTAL_CHARS,
    result_value,
)
from jupyter_agent.runtime.secrets import Scrubber


def _text(text: str) -> SimpleNamespace:
    return SimpleNamespace(type="text", text=text)


def _result(*blocks: SimpleNamespace, structured: object = None) -> SimpleNamespace:
    return SimpleNamespace(content=list(blocks), structured_content=structured)


def test_a_long_text_is_cut_and_a_big_image_becomes_a_note() -> None:
    big = base64.b64encode(b"\0" * (MAX_IMAGE_BYTES + 1)).decode()
    value = result_value(
        _result(_text("x" * (MAX_TEXT_CHARS + 5)), SimpleNamespace(type="image", data=big,
                                                                    mime_type="image/png")),
        Scrubber({}),
    )  # fmt: skip
    first, second = value["content"]
    assert first["text"].endswith("[cut: 5 more characters]")
    assert second == {
        "type": "text",
        "text": f"[image: image/png, {MAX_IMAGE_BYTES + 1} bytes: too large to show]",
    }


def test_blocks_past_the_total_are_left_out_with_a_note() -> None:
    per = MAX_TEXT_CHARS  # each block at its own bound: only the total stops them
    count = MAX_TOTAL_CHARS // per + 5
    value = result_value(_result(*(_text("y" * per) for _ in range(count))), Scrubber({}))
    kept = MAX_TOTAL_CHARS // per
    assert len(value["content"]) == kept + 1
    assert value["content"][-1]["text"] == (
        f"[{count - kept} more blocks left out: the result is over {MAX_TOTAL_CHARS:,} characters]"
    )
    total = sum(len(b["text"]) for b in value["content"][:-1])
    assert total <= MAX_TOTAL_CHARS


def test_a_known_secret_is_scrubbed_everywhere() -> None:
    secret = "sk-test-" + "q" * 24
    value = result_value(
        _result(_text(f"key {secret}"), structured={"k": secret}), Scrubber({secret: "KEY"})
    )
    assert secret not in repr(value)
    assert value["structured"] == {"k": "[redacted: KEY]"}
