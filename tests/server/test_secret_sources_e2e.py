"""Every source of a secret, in every simple encoding, reaches no record: end to end.

A real ``jupyter server`` subprocess holds a made-up provider key in its environment; its
codegen tier is the Anthropic adapter pointed at the fake provider on loopback, keyed by
``env:ANTHROPIC_API_KEY``. The key holds ``/``, ``+`` and ``?`` so that each encoding
differs from the key and from the others: base64 (at each offset) and URL-safe base64, hex
in both cases, reversed, URL-encoded.

- the person's message holds it (hex), so does the title they give (base64) and the one
  they rename to (reversed), and a memory they try to save (URL-safe base64);
- the model's reply text, its thinking and its tool call's arguments hold it in every form;
- the cell reads it from the server's environment and prints it encoded, posts it (an app
  call's arguments), gets it back from an in-cell ``llm.chat`` (an app call's result: the
  nested reply holds it) and tries to save it as a memory.

Then no form of it is in the effect log files, the turns (``GET agent/chats/{id}``), the
chat list, the memories, the exported notebook, the events, or the requests the provider
received; ``jupyter agent replay`` of each scrubbed log exits 0.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.llm.fake.server import FakeProvider
from tests.server.test_e2e import (
    Server,
    read_until,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.timeout(300)

NAME = "ANTHROPIC_API_KEY"
# "????" (bytes 0x3f) puts "/" in the key's base64 at every offset: base64url differs.
KEY = "sk-ant-e2e/????" + secrets.token_hex(16) + "+k"
RAW = KEY.encode()

#: Each encoding of the key, computed here (not with the code under test).
FORMS = {
    "base64": base64.b64encode(RAW).decode(),
    "base64 unpadded": base64.b64encode(RAW).decode().rstrip("="),
    "base64 at offset 1": base64.b64encode(b"x" + RAW).decode(),
    "base64 at offset 2": base64.b64encode(b"xy" + RAW).decode(),
    "base64url": base64.urlsafe_b64encode(RAW).decode(),
    "hex": RAW.hex(),
    "HEX": RAW.hex().upper(),
    "reversed": KEY[::-1],
    "quote": quote(KEY, safe=""),
    "quote_plus": quote_plus(KEY),
}
EVERY = " | ".join(f"{name}: {value}" for name, value in FORMS.items())

CELL = r"""
import base64, os, urllib.parse
environ = open(f"/proc/{os.getppid()}/environ").read().split("\0")
key = [x.split("=", 1)[1] for x in environ if x.startswith("ANTHROPIC_API_KEY=")][0]
b64 = base64.b64encode(key.encode()).decode()
print("base64:", b64)
print("HEX:", key.encode().hex().upper())
print("reversed:", key[::-1])
print("quoted:", urllib.parse.quote_plus(key))
chat.post("url-safe: " + base64.urlsafe_b64encode(key.encode()).decode())
print("nested:", llm.chat("decode this: " + b64))
try:
    memory.save("the provider key is " + key.encode().hex())
except AppCallError as err:
    print("memory refused")
b64
"""

SCRIPT = [
    {
        "text": f"I will print the key encoded. {EVERY}",
        "cells": [CELL + f"# {FORMS['hex']} {FORMS['base64']} {FORMS['reversed']}\n"],
    },
    {"text": f"decoded: {KEY} (or {FORMS['HEX']})"},  # the cell's llm.chat
    {"thinking": f"the key is {KEY}; {EVERY}", "text": f"Done. The key: {KEY}. {EVERY}"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": fake.base_url,
        "api_key_ref": f"env:{NAME}",
    }
    started = start_server(
        tmp_path_factory.mktemp("secret-sources"),
        {"pool_size": 0, "cell_timeout_s": 30, "tiers": {"codegen": tier}},
        fake,
        extra_env={NAME: KEY},
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def assert_clean(where: str, text: str) -> None:
    """No form of the key in ``text``: not even the middle of an encoded one."""
    assert KEY not in text, f"the key is in {where}"
    for name, value in FORMS.items():
        assert value[3:-3] not in text, f"the key ({name}) is in {where}"


def logs(server: Server) -> list[Path]:
    return sorted((server.root.parent / "data").rglob("run_*.jsonl"))


def test_no_form_of_the_key_from_any_source_reaches_a_record(server: Server) -> None:
    server.fake.load(SCRIPT)
    with server.http() as client:
        made = client.post("agent/chats", json={"title": f"key {FORMS['base64']}"})
        assert made.status_code == 201, made.text
        chat_id = made.json()["id"]
        assert made.json()["title"] == f"key [redacted: {NAME} (base64)]"
        ws = server.events(chat_id)
        try:
            sent = client.post(
                f"agent/chats/{chat_id}/messages",
                json={"text": f"my key in hex is {FORMS['hex']}; print it encoded"},
            )
            assert sent.status_code == 202, sent.text
            run_id = sent.json()["run_id"]
            events = read_until(ws, "run_end", run_id)
        finally:
            ws.close()
        renamed = client.patch(f"agent/chats/{chat_id}", json={"title": FORMS["reversed"]})
        assert renamed.json()["title"] == f"[redacted: {NAME} (reversed)]"
        refused = client.post("agent/memories", json={"text": f"key: {FORMS['base64url']}"})
        assert refused.status_code == 400
        assert refused.json()["reason"] == "credential"

        assert_clean("the events", json.dumps(events))
        outputs = json.dumps([e for e in events if e["type"] == "cell_output"])
        for label in ("base64", "hex", "reversed", "url-encoded"):
            assert f"[redacted: {NAME} ({label})]" in outputs, label  # the cell printed it

        chat = client.get(f"agent/chats/{chat_id}").json()
        [turn] = chat["turns"]
        assert turn["llm"]["stopReason"] == "done", turn
        assert turn["userText"] == f"my key in hex is [redacted: {NAME} (hex)]; print it encoded"
        assert turn["replies"][-1]["text"].startswith(f"Done. The key: [redacted: {NAME}].")
        assert f"[redacted: {NAME} (base64url)]" in json.dumps(turn)  # the chat.post bubble
        assert_clean("the stored turn", json.dumps(turn))
        assert_clean("the chat list", client.get("agent/chats").text)
        assert_clean("the memories", client.get("agent/memories").text)
        detail = client.get(f"agent/runs/{run_id}")
        assert detail.status_code == 200
        assert_clean("the run detail", detail.text)

        written = client.post(f"agent/runs/{run_id}/notebook", json={})
        assert written.status_code in (200, 201), written.text
        exported = (server.root / written.json()["path"]).read_text(encoding="utf-8")
        assert_clean("the exported notebook", exported)
        assert f"[redacted: {NAME} (base64)]" in exported
        assert_clean("the chat notebook", client.get(f"agent/chats/{chat_id}/notebook").text)

    [path] = [p for p in logs(server) if p.stem == run_id]
    log = path.read_text(encoding="utf-8")
    assert_clean("the effect log file", log)
    lines = [json.loads(line) for line in log.splitlines()[1:]]
    posts = [x["data"] for x in lines if x["name"] == "http.post" and x["phase"] == "result"]
    assert len(posts) == 3  # the loop's two calls and the cell's llm.chat
    thinking = posts[2]["json"]["content"][0]
    assert thinking["type"] == "thinking"
    assert f"[redacted: {NAME} (base64url)]" in thinking["thinking"]
    tool = posts[0]["json"]["content"][1]
    assert tool["type"] == "tool_use"
    assert f"# [redacted: {NAME} (hex)]" in tool["input"]["code"]  # the tool call's arguments
    apps = [x for x in lines if x["name"] == "app.call" and x["phase"] == "result"]
    nested = [a["data"]["value"] for a in apps if isinstance(a["data"]["value"], str)]
    assert any(f"decoded: [redacted: {NAME}]" in value for value in nested), nested
    assert "memory refused" in log

    bodies = json.dumps([r.json for r in server.fake.requests])
    assert_clean("the model requests", bodies)
    assert all(r.headers.get("x-api-key") == KEY for r in server.fake.requests)


def test_each_scrubbed_log_replays_identically(server: Server) -> None:
    paths = logs(server)
    assert paths
    for path in paths:
        assert main(["replay", str(path)]) == 0, path
