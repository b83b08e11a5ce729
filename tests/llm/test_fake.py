"""The scripted fake provider: script validation, wires, checks, lifecycle, command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from jupyter_agent.exceptions import ConfigError
from jupyter_agent.llm.fake.script import parse_script
from jupyter_agent.llm.fake.server import FakeProvider

PATHS = {
    "anthropic": "/v1/messages",
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
}


def post(fake: FakeProvider, wire: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    with httpx.Client(trust_env=False) as client:
        return client.post(fake.base_url + PATHS[wire], json=body, headers=headers, timeout=10)


def ask(wire: str, text: str = "hello") -> dict[str, Any]:
    if wire == "openai-responses":
        return {"model": "m", "input": [{"role": "user", "content": text}]}
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize(
    ("script", "needle"),
    [
        ([{"text": "ok"}, {"txt": "typo"}], "step 1: field 'txt': unknown field"),
        ([{"cells": "print(1)"}, {"cells": [1]}], "step 1: field 'cells'"),
        ([{"stop": "finished"}], "step 0: field 'stop'"),
        ([{"error": {"status": 200}}], "step 0: field 'error.status'"),
        ([{"error": {"status": 429, "retry": 1}}], "step 0: field 'error.retry'"),
        ([{"usage": {"in": -1}}], "step 0: field 'usage.in'"),
        ([{"usage": {"input": 3}}], "step 0: field 'usage.input'"),
        ([{"text": "a"}, {"text": "b"}, {"delay_s": "soon"}], "step 2: field 'delay_s'"),
        ([{"tool_mode": "yaml"}], "step 0: field 'tool_mode'"),
        ([{"expect": {"last_user": "x"}}], "step 0: field 'expect.last_user'"),
        ([{"malformed": "yes"}], "step 0: field 'malformed'"),
        (["text"], "step 0: must be an object"),
        ({"steps": [], "repeat": True}, "at least one step"),
        ({"step": []}, "unknown top-level field 'step'"),
        ("[{", "not valid JSON"),
    ],
)
def test_script_errors_name_the_step_and_field(script, needle):
    with pytest.raises(ConfigError) as caught:
        parse_script(script)
    assert needle in str(caught.value)


def test_script_from_a_file_and_json_text(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"text": "hi"}], "repeat": True}))
    assert parse_script(path).repeat
    assert parse_script(str(path)).steps[0].text == "hi"
    assert parse_script('[{"bash": ["ls"]}]').steps[0].effective_stop == "tool"


@pytest.mark.parametrize("wire", sorted(PATHS))
def test_script_order_repeat_and_exhaustion(fake_provider, wire):
    fake = fake_provider([{"text": "one"}, {"text": "two"}])
    assert fake.remaining == 2
    assert post(fake, wire, ask(wire)).status_code == 200
    assert post(fake, wire, ask(wire)).status_code == 200
    assert fake.remaining == 0
    exhausted = post(fake, wire, ask(wire))
    assert exhausted.status_code == 400
    assert "script exhausted" in exhausted.text
    fake.load({"steps": [{"text": "again"}], "repeat": True})
    for _ in range(3):
        assert "again" in post(fake, wire, ask(wire)).text
    assert [r.step for r in fake.requests] == [0, 1, None, 0, 0, 0]


@pytest.mark.parametrize(
    ("wire", "check"),
    [
        (
            "anthropic",
            lambda b: b["type"] == "error" and b["error"]["type"] == "authentication_error",
        ),
        ("openai-chat", lambda b: b["error"]["code"] == "invalid_api_key"),
        ("openai-responses", lambda b: set(b["error"]) == {"message", "type", "param", "code"}),
    ],
)
def test_wrong_key_gets_the_real_401_shape(fake_provider, wire, check):
    fake = fake_provider([{"text": "ok"}], expect_key="right-key")
    wrong = post(fake, wire, ask(wire), **{"x-api-key": "nope", "authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert check(wrong.json())
    assert fake.remaining == 1
    good = (
        {"x-api-key": "right-key"} if wire == "anthropic" else {"authorization": "Bearer right-key"}
    )
    assert post(fake, wire, ask(wire), **good).status_code == 200


@pytest.mark.parametrize("wire", sorted(PATHS))
def test_expect_mismatch_answers_400(fake_provider, wire):
    fake = fake_provider(
        [{"expect": {"last_user_contains": "hello"}, "text": "hi"}] * 2
        + [{"expect": {"model": "other"}, "text": "x"}]
    )
    assert post(fake, wire, ask(wire, "well hello there")).status_code == 200
    miss = post(fake, wire, ask(wire, "goodbye"))
    assert miss.status_code == 400
    assert "step 1" in miss.text
    assert "hello" in miss.text
    assert post(fake, wire, ask(wire)).status_code == 400


def test_system_prompt_expectation(fake_provider):
    fake = fake_provider([{"expect": {"system_contains": "agent"}, "text": "ok"}] * 2)
    assert post(fake, "anthropic", dict(ask("anthropic"), system="You are an agent.")).is_success
    body = dict(ask("openai-responses"), instructions="no match")
    assert post(fake, "openai-responses", body).status_code == 400


def test_anthropic_thinking_round_trip_is_checked_byte_exact(fake_provider):
    fake = fake_provider(
        [{"thinking": "Let me think about it.", "text": "Hi."}] + [{"text": "ok"}] * 2
    )
    first = post(fake, "anthropic", ask("anthropic")).json()
    thinking = first["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["signature"]

    def follow_up(block: dict[str, Any]) -> httpx.Response:
        messages = [*ask("anthropic")["messages"], {"role": "assistant", "content": [block]}]
        messages.append({"role": "user", "content": "go on"})
        return post(fake, "anthropic", {"model": "m", "messages": messages})

    assert follow_up(thinking).status_code == 200
    altered = follow_up(dict(thinking, thinking=thinking["thinking"] + " "))
    assert altered.status_code == 400
    assert altered.json()["error"]["type"] == "invalid_request_error"
    assert follow_up(dict(thinking, signature=thinking["signature"][:-2])).status_code == 400


def test_anthropic_refuses_a_first_message_that_is_not_the_users(fake_provider):
    # As the real Messages API does; other wires (a system message first) are not checked.
    fake = fake_provider([{"text": "ok"}] * 2)
    assistant_first = {
        "model": "m",
        "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "I searched."}]},
            {"role": "user", "content": "hello"},
        ],
    }
    refused = post(fake, "anthropic", assistant_first)
    assert refused.status_code == 400
    assert refused.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": 'messages: first message must use the "user" role',
        },
    }
    assert fake.remaining == 2  # no step consumed; the request is still recorded
    assert (fake.requests[-1].json, fake.requests[-1].step) == (assistant_first, None)
    assert post(fake, "openai-chat", assistant_first).is_success
    assert post(fake, "anthropic", ask("anthropic")).is_success


def test_responses_reasoning_round_trip_is_checked(fake_provider):
    fake = fake_provider([{"thinking": "Reasoning here.", "text": "Hi."}, {"text": "ok"}])
    body = dict(ask("openai-responses"), include=["reasoning.encrypted_content"], store=False)
    item = post(fake, "openai-responses", body).json()["output"][0]
    assert item["type"] == "reasoning"
    assert item["encrypted_content"]
    tampered = dict(item, encrypted_content=item["encrypted_content"][:-4] + "AAAA")
    for reasoning, status in ((tampered, 400), (item, 200)):
        follow = {"model": "m", "input": [*body["input"], reasoning]}
        assert post(fake, "openai-responses", follow).status_code == status


def test_chat_reasoning_content_and_usage_fields(fake_provider):
    usage = {"in": 100, "out": 20, "cache_read": 50, "cache_write": 10, "reasoning": 5}
    fake = fake_provider([{"thinking": "Hmm.", "text": "Done: 42.", "usage": usage}] * 2)
    chat = post(fake, "openai-chat", ask("openai-chat")).json()
    assert chat["choices"][0]["message"]["reasoning_content"] == "Hmm."
    assert chat["choices"][0]["finish_reason"] == "stop"
    assert chat["usage"]["prompt_tokens"] == 160
    assert chat["usage"]["prompt_tokens_details"] == {"cached_tokens": 50}
    assert chat["usage"]["completion_tokens_details"] == {"reasoning_tokens": 5}
    anthropic = post(fake, "anthropic", ask("anthropic")).json()
    assert anthropic["usage"] == {
        "input_tokens": 100,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 50,
        "output_tokens": 20,
    }


@pytest.mark.parametrize(
    ("wire", "field", "value"),
    [
        ("anthropic", "stop_reason", "max_tokens"),
        ("openai-chat", "finish_reason", "length"),
        ("openai-responses", "status", "incomplete"),
    ],
)
def test_stop_length_in_each_wire(fake_provider, wire, field, value):
    fake = fake_provider([{"text": "cut", "stop": "length"}])
    body = post(fake, wire, ask(wire)).json()
    got = body["choices"][0][field] if wire == "openai-chat" else body[field]
    assert got == value


@pytest.mark.parametrize(
    ("mode", "marker"),
    [("fenced", "```python\nx = 1\n```"), ("xml", "<run_cell>\nx = 1\n</run_cell>")],
)
def test_text_tool_modes_write_cells_into_the_text(fake_provider, mode, marker):
    fake = fake_provider([{"text": "Here:", "cells": ["x = 1"], "tool_mode": mode}])
    body = post(fake, "anthropic", ask("anthropic")).json()
    assert [b["type"] for b in body["content"]] == ["text"]
    assert marker in body["content"][0]["text"]
    assert body["stop_reason"] == "end_turn"


def test_native_tool_ids_and_inputs(fake_provider):
    step = {"cells": ["print(1)"], "bash": ["ls"]}
    fake = fake_provider([step] * 3)
    anthropic = post(fake, "anthropic", ask("anthropic")).json()["content"]
    assert [(b["name"], b["input"]) for b in anthropic] == [
        ("run_cell", {"code": "print(1)"}),
        ("bash", {"command": "ls"}),
    ]
    assert all(b["id"].startswith("toolu_") for b in anthropic)
    chat = post(fake, "openai-chat", ask("openai-chat")).json()["choices"][0]["message"]
    assert all(c["id"].startswith("call_") for c in chat["tool_calls"])
    output = post(fake, "openai-responses", ask("openai-responses")).json()["output"]
    assert all(i["id"].startswith("fc_") and i["call_id"].startswith("call_") for i in output)


def test_stop_does_not_wait_for_hanging_steps():
    fake = FakeProvider([{"timeout": True}, {"delay_s": 30}]).start()
    errors: list[BaseException] = []

    def hang() -> None:
        try:
            post(fake, "anthropic", ask("anthropic"))
        except httpx.HTTPError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hang) for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in range(200):
        if len(fake.requests) == 2:
            break
        time.sleep(0.01)
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 5
    for thread in threads:
        thread.join(timeout=5)
    assert len(errors) == 2  # the clients saw the connection close, not a reply


def test_unknown_route_is_404(fake_provider):
    fake = fake_provider([{"text": "x"}])
    with httpx.Client(trust_env=False) as client:
        assert client.post(fake.base_url + "/v2/nothing", json={}).status_code == 404
    assert fake.remaining == 1


def test_command_line_prints_the_base_url_and_serves(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the command line"}]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_agent.llm.fake.server",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        with httpx.Client(trust_env=False) as client:
            reply = client.post(base_url + "/v1/messages", json=ask("anthropic"), timeout=10)
        assert reply.json()["content"][0]["text"] == "from the command line"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("wire", "tail"),
    [
        (
            "anthropic",
            [
                {"role": "assistant", "content": [{"type": "text", "text": "ran it"}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "Output 1"}],
                },
            ],
        ),
        (
            "openai-chat",
            [
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "c", "content": "Output 1"},
            ],
        ),
        (
            "openai-responses",
            [
                {"type": "function_call", "call_id": "c", "name": "run_cell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "Output 1"},
            ],
        ),
    ],
)
def test_last_user_turn_includes_tool_results(fake_provider, wire, tail):
    fake = fake_provider([{"expect": {"last_user_contains": "Output 1"}, "text": "ok"}] * 2)
    body = ask(wire, "question")
    key = "input" if wire == "openai-responses" else "messages"
    assert post(fake, wire, dict(body, **{key: body[key] + tail})).status_code == 200
    assert post(fake, wire, body).status_code == 400


def test_turn_position_counts_this_turns_replies_on_every_wire() -> None:
    from jupyter_agent.llm.fake.script import turn_position

    tool_result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    anthropic = {
        "messages": [
            {"role": "user", "content": "old question"},
            {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]},
            {"role": "user", "content": [{"type": "text", "text": "new question"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]},
            {"role": "user", "content": [tool_result, {"type": "text", "text": "steer"}]},
        ]
    }
    assert turn_position("anthropic", anthropic) == 1
    assert turn_position("anthropic", {"messages": anthropic["messages"][:3]}) == 0
    chat = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "a", "content": "r"},
            {"role": "assistant", "tool_calls": [{"id": "b"}]},
            {"role": "tool", "tool_call_id": "b", "content": "r"},
        ]
    }
    assert turn_position("chat", chat) == 2
    responses = {
        "input": [
            {"role": "user", "content": "q"},
            {"type": "reasoning", "id": "r1"},
            {"type": "function_call", "call_id": "a"},
            {"type": "function_call", "call_id": "b"},
            {"type": "function_call_output", "call_id": "a"},
            {"type": "function_call_output", "call_id": "b"},
        ]
    }
    assert turn_position("responses", responses) == 1


def test_a_per_turn_script_starts_over_for_each_conversation() -> None:
    script = {"steps": [{"text": "first"}, {"text": "second"}], "per_turn": True}
    with FakeProvider(script) as fake:
        for q in ("a", "b", "c"):  # three fresh conversations: each gets step 0
            reply = httpx.post(
                f"{fake.base_url}/v1/messages",
                json={
                    "model": "m",
                    "max_tokens": 5,
                    "messages": [{"role": "user", "content": q}],
                },
            )
            assert reply.json()["content"][0]["text"] == "first"


def test_routes_play_the_steps_of_the_message_they_name() -> None:
    script = parse_script(
        {
            "per_turn": True,
            "steps": [{"text": "no route"}],
            "routes": [
                {"when": "Total:", "steps": [{"text": "the total"}]},
                {"when": "Mean:", "steps": [{"text": "the mean"}]},
            ],
        }
    )

    def body(*users: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": u} for u in users]}

    assert script.steps_for("anthropic", body("Total: of x")) == script.routes[0].steps
    assert script.steps_for("anthropic", body("Mean: of x")) == script.routes[1].steps
    assert script.steps_for("anthropic", body("hello")) == script.steps
    # A fenced loop's cell result is a user message: the opening one further back counts.
    assert script.steps_for("anthropic", body("Mean: of x", "Result of run_cell: 3")) == (
        script.routes[1].steps
    )
    # The newest message that names a route wins (a chat's later turn).
    assert script.steps_for("anthropic", body("Total: a", "Mean: b")) == script.routes[1].steps
    blocks = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Total: y"}]}]}
    assert script.steps_for("anthropic", blocks) == script.routes[0].steps


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"routes": [{"when": "a", "steps": []}]}, '"routes" needs "per_turn": true'),
        ({"per_turn": True, "routes": [{"when": "", "steps": [{}]}]}, "route 0 must be"),
        ({"per_turn": True, "routes": [{"when": "a", "steps": []}]}, "route 0 must be"),
        ({"per_turn": True, "routes": [{"when": "a", "steps": [{"bogus": 1}]}]}, "bogus"),
        ({"per_turn": True, "routes": "x"}, '"routes" must be a list'),
    ],
)
def test_bad_routes_are_refused(data: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        parse_script(data)
