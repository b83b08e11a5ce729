"""No secret reaches a record, and kernel output is valid Unicode: end to end.

A real ``jupyter server`` subprocess holds a (fake) provider key in its environment and a
random token; its codegen tier is the Anthropic adapter pointed at the fake provider on
loopback, keyed by that environment variable. The model's cells and command read the
server's environment (``/proc/<server pid>/environ``: the kernel's parent is the server),
its command line (the token) and its runtime file, print them, pass the key to an
in-cell ``llm.chat`` and ``chat.post``, raise it in an exception, and print invalid UTF-8
from bash. Then neither the key nor the token may appear in the effect log file, the run
detail, the stored turn, the exported notebooks, the live events, the requests the
provider received (their bodies: the key travels in the ``x-api-key`` header, as it must)
or the server's log; the turn is written and the log replays.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.server.test_e2e import (
    Server,
    new_chat,
    read_until,
    send,
    start_server,
    stop_server,
    wait_turn,
)

pytestmark = pytest.mark.timeout(300)

KEY = "sk-ant-test-" + secrets.token_hex(20)
OTHER = "other-secret-" + secrets.token_hex(8)

READ_SERVER = r"""
import glob, os, sys
ppid = os.getppid()
environ = open(f"/proc/{ppid}/environ").read()
print(environ.replace("\0", "\n"))
print(open(f"/proc/{ppid}/cmdline").read().replace("\0", " "))
for name in glob.glob(os.path.join(os.environ["JUPYTER_RUNTIME_DIR"], "jpserver-*.json")):
    print(open(name).read())
print(dict(os.environ))
key = [x.split("=", 1)[1] for x in environ.split("\0") if x.startswith("ANTHROPIC_API_KEY=")][0]
sys.stderr.write("to stderr: " + key + "\n")
try:
    llm.chat("remember this: " + key)
except Exception as err:
    print("llm.chat failed:", err)
chat.post("the key is " + key)
key
"""
RAISE = "raise RuntimeError('boom ' + key)"
SURROGATES = (
    'import sys\nprint("a\\ud800b")\nsys.stdout.write("lone \\udc80 surrogate\\n")\n'
    'chat.post("half an emoji \\ud83d")'
)

BASH = "env; cat /proc/$PPID/environ | tr '\\0' '\\n'; printf 'bad \\355\\240\\200 bytes\\n'"
SCRIPT = [
    {"text": "Let me look around.", "cells": [READ_SERVER, RAISE]},
    # The in-cell llm.chat: a provider that echoes the key in its error.
    {"error": {"status": 401, "message": f"invalid x-api-key: {KEY}"}},
    {"text": "And the shell.", "bash": [BASH]},
    {"text": "Done looking."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": fake.base_url,
        "api_key_ref": "env:ANTHROPIC_API_KEY",
    }
    started = start_server(
        tmp_path_factory.mktemp("secrets"),
        {"pool_size": 0, "cell_timeout_s": 20, "tiers": {"codegen": tier}},
        fake,
        extra_env={"ANTHROPIC_API_KEY": KEY, "SOME_SERVICE_PASSWORD": OTHER},
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def assert_clean(where: str, text: str, server: Server) -> None:
    assert KEY not in text, f"the key is in {where}"
    assert OTHER not in text, f"a filtered environment value is in {where}"
    assert server.token not in text, f"the server token is in {where}"
    text.encode("utf-8")  # valid Unicode: no lone surrogate anywhere


def effect_log(server: Server, run_id: str) -> str:
    [path] = (server.root.parent / "data").rglob(f"{run_id}.jsonl")
    return path.read_text(encoding="utf-8")


def test_a_cell_printing_the_servers_environment_leaks_nothing(server: Server) -> None:
    server.fake.load(SCRIPT)
    with server.http() as client:
        chat_id = new_chat(client)
        ws = server.events(chat_id)
        try:
            run_id = send(client, chat_id, "look at the environment")["run_id"]
            events = read_until(ws, "run_end", run_id)
        finally:
            ws.close()
        live = json.dumps(events, ensure_ascii=False)
        assert_clean("the live events", live, server)
        outputs = [e for e in events if e["type"] == "cell_output"]
        assert "[redacted: ANTHROPIC_API_KEY]" in json.dumps(outputs)  # the cell printed it
        chat = client.get(f"agent/chats/{chat_id}").json()
        [turn] = [t for t in chat["turns"] if t["run_id"] == run_id]
        assert turn["llm"]["stopReason"] == "done", turn
        assert turn["replies"][-1]["text"] == "Done looking."
        assert_clean("the stored turn", json.dumps(turn, ensure_ascii=False), server)
        assert "[redacted: ANTHROPIC_API_KEY]" in json.dumps(turn)  # the chat.post bubble

        log = effect_log(server, run_id)
        assert_clean("the effect log file", log, server)
        for marker in ("ANTHROPIC_API_KEY", "server token", "SOME_SERVICE_PASSWORD"):
            assert f"[redacted: {marker}]" in log, marker
        lines = [json.loads(line) for line in log.splitlines()][1:]  # after the header
        cells = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
        assert cells[0]["error"] is None, cells[0]["error"]
        assert cells[1]["error"]["evalue"] == "boom [redacted: ANTHROPIC_API_KEY]"
        [bash] = [x["data"] for x in lines if x["name"] == "bash.run" and x["phase"] == "result"]
        assert "bad \ufffd\ufffd\ufffd bytes" in bash["stdout"]["text"]  # invalid UTF-8, replaced
        digests = [line["data"]["digest"] for line in lines if "digest" in (line["data"] or {})]
        assert len(digests) == 3  # two cells, one command: each digest the model read
        detail = client.get(f"agent/runs/{run_id}")
        assert detail.status_code == 200
        assert_clean("the run detail", detail.text, server)
        raw = client.get(f"agent/runs/{run_id}", params={"log": "raw"})
        assert_clean("the raw run log", raw.text, server)

        for url in (f"agent/runs/{run_id}/notebook", f"agent/chats/{chat_id}/notebook"):
            notebook = client.get(url)
            assert notebook.status_code == 200, url
            assert_clean(url, notebook.text, server)
        written = client.post(f"agent/runs/{run_id}/notebook", json={})
        assert written.status_code in (200, 201), written.text
        exported = (server.root / written.json()["path"]).read_text(encoding="utf-8")
        assert_clean("the exported notebook", exported, server)
        assert "[redacted: ANTHROPIC_API_KEY]" in exported

    bodies = json.dumps([r.json for r in server.fake.requests], ensure_ascii=False)
    assert_clean("the model requests", bodies, server)
    assert "[redacted: ANTHROPIC_API_KEY]" in bodies  # the digests and llm.chat's message
    assert all(r.headers.get("x-api-key") == KEY for r in server.fake.requests)
    assert_clean("the server's log", server.log.read_text(errors="replace"), server)


def test_a_cell_printing_a_lone_surrogate_ends_in_a_clean_turn(server: Server) -> None:
    server.fake.load([{"text": "Printing.", "cells": [SURROGATES]}, {"text": "Printed."}])
    with server.http() as client:
        chat_id = new_chat(client)
        run_id = send(client, chat_id, "print something odd")["run_id"]
        turn = wait_turn(client, chat_id, run_id, timeout_s=120)
        assert turn["replies"][-1]["text"] == "Printed."
        log = effect_log(server, run_id)
        assert_clean("the effect log", log, server)
        lines = [json.loads(line) for line in log.splitlines()][1:]  # after the header
        [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
        assert cell["error"] is None, cell["error"]  # not a CellTimeout
        assert "a\ufffdb" in json.dumps(cell, ensure_ascii=False)
        assert "lone \ufffd surrogate" in json.dumps(cell, ensure_ascii=False)
        notebook = client.get(f"agent/runs/{run_id}/notebook")
        assert notebook.status_code == 200
        outputs = [o for c in notebook.json()["cells"] for o in c.get("outputs", [])]
        assert any("a\ufffdb" in str(o.get("text", "")) for o in outputs), outputs


def test_a_failed_model_call_never_shows_the_key(server: Server) -> None:
    server.fake.load([{"error": {"status": 400, "message": f"bad key {KEY} given"}}])
    with server.http() as client:
        chat_id = new_chat(client)
        ws = server.events(chat_id)
        try:
            run_id = send(client, chat_id, "hello")["run_id"]
            events = read_until(ws, "run_end", run_id)
        finally:
            ws.close()
        assert_clean("the live events", json.dumps(events), server)
        chat = client.get(f"agent/chats/{chat_id}").json()
        [turn] = [t for t in chat["turns"] if t["run_id"] == run_id]
        assert turn["llm"]["stopReason"] == "error"
        assert_clean("the error turn", json.dumps(turn), server)
        log = effect_log(server, run_id)
        assert "bad key" in log  # the provider's error is recorded...
        assert_clean("the effect log", log, server)  # ...without the key (transport redacts)


def test_the_scrubbed_log_still_replays(server: Server) -> None:
    from jupyter_agent.trace.verify import verify_run

    runs = sorted((server.root.parent / "data").rglob("run_*.jsonl"))
    assert runs
    for path in runs:
        outcome = verify_run(Path(path))
        assert outcome.identical, outcome.message
