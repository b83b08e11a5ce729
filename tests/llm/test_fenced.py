"""Text tool modes: parsing fenced / xml calls, their errors, and the history rewrite."""

from __future__ import annotations

import pytest

from jupyter_agent.llm.fenced import (
    parse_text_tool_calls,
    render_tools_for_prompt,
    stop_sequences,
    to_text_mode,
)
from jupyter_agent.messages import File, Message, Text, Thinking, ToolCall, ToolResult
from jupyter_agent.tools import BASH, BASH_V5, RUN_CELL, RUN_CELL_V5

TOOLS = (RUN_CELL, BASH)


def _calls(parts):
    return [(p.name, p.args) for p in parts if isinstance(p, ToolCall)]


def test_fenced_blocks_become_calls_in_order():
    text = (
        "First I look.\n\n```python\nimport os\nprint(os.getcwd())\n```\n"
        "Then the shell:\n```bash\nls -la\n```\nDone."
    )
    parts, error = parse_text_tool_calls(text, "fenced", TOOLS)
    assert error is None
    assert _calls(parts) == [
        ("run_cell", {"code": "import os\nprint(os.getcwd())"}),
        ("bash", {"command": "ls -la"}),
    ]
    assert [type(p).__name__ for p in parts] == ["Text", "ToolCall", "Text", "ToolCall", "Text"]
    assert parts[0] == Text(text="First I look.")
    again, _ = parse_text_tool_calls(text, "fenced", TOOLS)
    assert [p.id for p in again if isinstance(p, ToolCall)] == [
        p.id for p in parts if isinstance(p, ToolCall)
    ]  # deterministic ids: a replay gets the same ones


def test_fenced_other_languages_are_text_and_longer_fences_work():
    text = "Example:\n```json\n{\"a\": 1}\n```\n````py\nx = '```'\n````\n```\nplain\n```"
    parts, error = parse_text_tool_calls(text, "fenced", TOOLS)
    assert error is None
    assert _calls(parts) == [("run_cell", {"code": "x = '```'"})]


def test_plain_answer_is_one_text_part():
    parts, error = parse_text_tool_calls("The answer is 4.", "fenced", TOOLS)
    assert (parts, error) == ((Text(text="The answer is 4."),), None)


def test_hallucinated_result_is_dropped():
    text = "```python\nprint(1)\n```\n```result\n1\n```\nSo it is 1."
    parts, error = parse_text_tool_calls(text, "fenced", TOOLS)
    assert error is None
    assert _calls(parts) == [("run_cell", {"code": "print(1)"})]
    assert "So it is" not in "".join(p.text for p in parts if isinstance(p, Text))


@pytest.mark.parametrize(
    ("text", "tools", "needle"),
    [
        ("Run:\n```python\nprint(1)\n", TOOLS, "never closed"),
        ("```python\n\n```", TOOLS, "is empty"),
        ("```bash\nls\n```", (RUN_CELL,), "not available"),
    ],
)
def test_fenced_errors(text, tools, needle):
    parts, error = parse_text_tool_calls(text, "fenced", tools)
    assert error is not None
    assert needle in error
    assert parts == (Text(text=text),)


def test_xml_calls():
    text = "Let me check.\n<run_cell>\nprint(2)\n</run_cell>\n<bash>ls</bash> <div>prose</div>"
    parts, error = parse_text_tool_calls(text, "xml", TOOLS)
    assert error is None
    assert _calls(parts) == [("run_cell", {"code": "print(2)"}), ("bash", {"command": "ls"})]
    fenced_inside = "<run_cell>\n```python\nx = 1 < 2\n```\n</run_cell>"
    parts, _ = parse_text_tool_calls(fenced_inside, "xml", TOOLS)
    assert _calls(parts) == [("run_cell", {"code": "x = 1 < 2"})]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<run_cell>\nprint(1)\n", "never closed"),
        ("<run_cell>  </run_cell>", "is empty"),
        ("<python>print(1)</python>", "not a tool here"),
    ],
)
def test_xml_errors(text, needle):
    _, error = parse_text_tool_calls(text, "xml", TOOLS)
    assert error is not None
    assert needle in error


def test_render_tools_and_stops():
    fenced = render_tools_for_prompt(TOOLS, "fenced")
    assert "```python" in fenced
    assert "```bash" in fenced
    assert RUN_CELL.description in fenced
    xml = render_tools_for_prompt((RUN_CELL,), "xml")
    assert "<run_cell>" in xml
    assert "<bash>" not in xml
    assert stop_sequences("fenced") == ["```result"]
    assert stop_sequences("native") == []
    with pytest.raises(ValueError, match="text tool mode"):
        render_tools_for_prompt(TOOLS, "native")


def test_history_rewritten_as_text_round_trips():
    text = "Looking.\n\n```python\nprint(1)\n```"
    parts, _ = parse_text_tool_calls(text, "fenced", TOOLS)
    call = next(p for p in parts if isinstance(p, ToolCall))
    png = File(media_type="image/png", data=b"img")
    history = [
        Message(role="user", parts=(Text(text="hi"),)),
        Message(role="assistant", parts=(Thinking(text="t"), *parts)),
        Message(
            role="user",
            parts=(ToolResult(call_id=call.id, content=(Text(text="1"), png), is_error=True),),
        ),
    ]
    out = to_text_mode(history, "fenced")
    assert out[1].parts[0] == Thinking(text="t")
    assert out[1].parts[1] == Text(text=text)  # what the model wrote, exactly
    assert out[2].parts == (Text(text="Result of run_cell (error):\n```result\n1\n```"), png)
    xml = to_text_mode(history, "xml")
    assert xml[2].parts[0] == Text(text='<result tool="run_cell" is_error="true">\n1\n</result>')
    # a block whose code holds a fence gets a longer fence, which parses back
    tricky = [
        Message(
            role="assistant", parts=(ToolCall(id="a", name="run_cell", args={"code": "s = '```'"}),)
        )
    ]
    rendered = to_text_mode(tricky, "fenced")[0].text
    assert _calls(parse_text_tool_calls(rendered, "fenced", TOOLS)[0]) == [
        ("run_cell", {"code": "s = '```'"})
    ]


V5 = (RUN_CELL_V5, BASH_V5)


def test_v5_tools_are_marked_as_writing_files_in_both_text_modes():
    # toolcaller@v5's tools take `writes`: the approval policy `writes` waits for those
    # calls, so a text-mode model must be able to say so too.
    fenced = "```python writes\nopen('out.csv', 'w').write('x')\n```\n```bash\nls\n```"
    parts, error = parse_text_tool_calls(fenced, "fenced", V5)
    assert error is None
    assert _calls(parts) == [
        ("run_cell", {"code": "open('out.csv', 'w').write('x')", "writes": True}),
        ("bash", {"command": "ls"}),
    ]
    xml = "<bash writes>\nrm old.csv\n</bash>\n<run_cell>\n1 + 1\n</run_cell>"
    parts, error = parse_text_tool_calls(xml, "xml", V5)
    assert error is None
    assert _calls(parts) == [
        ("bash", {"command": "rm old.csv", "writes": True}),
        ("run_cell", {"code": "1 + 1"}),
    ]
    for mode, marked in (("fenced", "```python writes"), ("xml", "<run_cell writes>")):
        assert marked in render_tools_for_prompt(V5, mode)
        assert "writes" not in render_tools_for_prompt(TOOLS, mode)  # older prompts as recorded
        # The history renders a marked call back as the model wrote it.
        call = ToolCall(id="t1", name="run_cell", args={"code": "x = 1", "writes": True})
        [message] = to_text_mode([Message(role="assistant", parts=(call,))], mode)
        assert marked in message.parts[0].text


def test_older_tools_read_a_writes_mark_as_prose_as_they_always_did():
    # An older version's recorded reply replays the same: the marked fence is not a call.
    text = "```python writes\nx = 1\n```"
    parts, error = parse_text_tool_calls(text, "fenced", TOOLS)
    assert (error, _calls(parts)) == (None, [])
    parts, error = parse_text_tool_calls("<run_cell writes>x</run_cell>", "xml", TOOLS)
    assert (error, _calls(parts)) == (None, [])
