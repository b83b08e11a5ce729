"""The agent looks at the person's live kernel (issue 28, items 1-3), through a real Jupyter
Server: the person's kernel is a notebook session started with ``POST /api/sessions``, its
variables set by executing code in it; the agent's cells (fake provider, real agent
kernel) call ``notebook.variables``, ``inspect``, ``kernel_state``, ``fetch`` and ``run``.

Checked: the answers name the expected variables and shapes; the person's namespace
(``%who_ls``) and execution count are the same afterwards; a busy kernel answers at once;
``fetch`` copies a DataFrame (its blob kept beside the log, the log holding no bytes) and
refuses a 150 MB value naming the limit; ``run`` waits for an approval of kind ``kernel``
and runs only after it; every run replays identically with the person's kernel shut down.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.cli.render import render_show
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.show import show_run
from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("server_kernelspec")]

PATH = "work/person.ipynb"
LOOK = """\
v = notebook.variables()
print(v)
print(notebook.inspect('df'))
s = notebook.kernel_state()
print('STATE', s['attached'], s['busy'], s['language'], s['execution_count'])
print('LASTERR', (s['last_error'] or '').strip().splitlines()[-1])
"""
BUSY = """\
import time
t = time.monotonic()
try:
    notebook.variables()
except Exception as e:
    print('BUSY', type(e).__name__, e)
print('TOOK', round(time.monotonic() - t, 2))
"""
FETCH = """\
d = notebook.fetch('df')
d.loc[0, 'a'] = 100
print('FETCHED', type(d).__name__, d.shape, int(d['a'].sum()))
try:
    notebook.fetch('big')
except Exception as e:
    print('BIG', e)
"""
RUN = """\
r = notebook.run("m = n + 1\\nprint('in person', m)")
print('RAN', r['status'], r['output'].strip())
"""

#: The agent cell the fake model writes, by test.
CELLS = {
    "test_variables_inspect_and_state_leave_the_person_kernel_as_it_was": LOOK,
    "test_a_busy_kernel_answers_at_once": BUSY,
    "test_fetch_copies_a_frame_and_refuses_a_value_over_the_limit": FETCH,
    "test_run_waits_for_the_person_and_runs_only_after": RUN,
    "test_a_denial_or_a_stop_reaches_the_model_as_a_refusal": RUN,
}


@pytest.fixture
def fake(fake_provider: Any, request: pytest.FixtureRequest) -> Any:
    code = CELLS[request.node.originalname]
    return fake_provider({"steps": [{"cells": [code]}, {"text": "Done."}], "per_turn": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "approval": "writes"}


class Person:
    """The person's notebook session and a client of their kernel (the test's hands)."""

    def __init__(self, fetch: Any, loop: Any, serverapp: Any, root: Path) -> None:
        (root / "work").mkdir(exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(), root / PATH)
        code, session = call(
            fetch, "api", "sessions", method="POST",
            body={"path": PATH, "type": "notebook", "name": "p", "kernel": {"name": "python3"}},
        )  # fmt: skip
        assert code == 201
        self.session_id, self.kernel_id = session["id"], session["kernel"]["id"]
        self.fetch, self.loop, self.km = fetch, loop, serverapp.kernel_manager
        self.client = self.km.get_kernel(self.kernel_id).client()
        self.client.start_channels()
        loop.run_until_complete(self.client.wait_for_ready(timeout=60))

    def execute(self, code: str, *, wait: bool = True) -> Any:
        if not wait:
            return self.client.execute(code)
        coro = self.client.execute(code, reply=True, timeout=120)
        return self.loop.run_until_complete(coro)

    def look(self) -> tuple[list[str], int]:
        """``%who_ls`` and the execution count, read without changing either."""
        expressions = {
            "who": "get_ipython().run_line_magic('who_ls', '')",
            "count": "get_ipython().execution_count",
        }
        coro = self.client.execute(
            "", silent=True, store_history=False, user_expressions=expressions, reply=True,
            timeout=60,
        )  # fmt: skip
        found = self.loop.run_until_complete(coro)["content"]["user_expressions"]
        return (
            ast.literal_eval(found["who"]["data"]["text/plain"]),
            int(found["count"]["data"]["text/plain"]),
        )

    def close(self) -> None:
        if self.session_id:
            self.client.stop_channels()
            call(self.fetch, "api", "sessions", self.session_id, method="DELETE")
            self.session_id = ""


@pytest.fixture
def person(fetch: Any, jp_asyncio_loop: Any, jp_serverapp: Any, jp_root_dir: Path) -> Any:
    person = Person(fetch, jp_asyncio_loop, jp_serverapp, jp_root_dir)
    person.execute(
        "import pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\n"
        "n = 41\n"
        "rows = [1, 2, 3, 4, 5]\n"
        "def helper(): pass\n"
        "_private = 1\n"
    )
    person.execute("1 / 0")  # the person's last error
    yield person
    person.close()


def _send(fetch: Any, text: str) -> tuple[str, str]:
    chat_id = new_chat(fetch)
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST",
        body={"text": text, "view": {"path": PATH}},
    )  # fmt: skip
    assert code == 202
    return chat_id, str(answer["run_id"])


def _log(agent_service: Any, run_id: str) -> Path:
    [path] = Path(agent_service.manager.runs_dir).rglob(f"{run_id}.jsonl")
    return path


def _prints(log: Path) -> str:
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    results = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    return "".join(str(p.get("text", p)) for r in results for p in r.get("prints") or [])


def test_variables_inspect_and_state_leave_the_person_kernel_as_it_was(
    fetch: Any, spin: Any, agent_service: Any, person: Person
) -> None:
    before = person.look()
    chat_id, run_id = _send(fetch, "what's in my df?")
    wait_turn(fetch, spin, chat_id, run_id)
    printed = _prints(_log(agent_service, run_id))
    assert f"# variables of the kernel of {PATH} (python3)" in printed
    assert "df: DataFrame = DataFrame 3 x 2 (a: int64, b: " in printed
    assert "n: int = 41" in printed
    assert "rows: list = list[5]" in printed
    assert "helper" not in printed.split("head():")[0]  # functions and modules left out
    assert "pd:" not in printed
    assert "_private" not in printed
    assert "head():" in printed
    assert "nulls per column:" in printed
    assert "STATE True False python" in printed
    assert "LASTERR ZeroDivisionError: division by zero" in printed
    assert person.look() == before  # no name added, no cell counted
    # The run replays from its log with the person's kernel gone.
    person.close()
    report = verify_run(_log(agent_service, run_id))
    assert report.identical, report


def test_a_busy_kernel_answers_at_once(
    fetch: Any, spin: Any, agent_service: Any, person: Person, jp_serverapp: Any
) -> None:
    person.execute("import time; time.sleep(20)", wait=False)
    kernel = jp_serverapp.kernel_manager.get_kernel(person.kernel_id)
    deadline = time.monotonic() + 30
    while kernel.execution_state != "busy" and time.monotonic() < deadline:
        spin(0.05)
    chat_id, run_id = _send(fetch, "what's in my kernel?")
    wait_turn(fetch, spin, chat_id, run_id)
    printed = _prints(_log(agent_service, run_id))
    assert "BUSY AppCallError the kernel of work/person.ipynb is busy running a cell" in printed
    took = float(printed.split("TOOK ", 1)[1].split()[0])
    assert took < 3.0, printed
    person.loop.run_until_complete(jp_serverapp.kernel_manager.interrupt_kernel(person.kernel_id))


def test_fetch_copies_a_frame_and_refuses_a_value_over_the_limit(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    person: Person,
    capsys: pytest.CaptureFixture[str],
) -> None:
    person.execute("big = bytes(150_000_000)")
    chat_id, run_id = _send(fetch, "copy my df")
    wait_turn(fetch, spin, chat_id, run_id)
    log = _log(agent_service, run_id)
    printed = _prints(log)
    assert "FETCHED DataFrame (3, 2) 105" in printed  # the copy changed, not the person's
    assert "BIG" in printed
    assert "over the copy limit of 100 MB" in printed
    person.execute("assert int(df['a'].sum()) == 6")
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    calls = [x for x in lines if x["name"] == "app.call" and x["phase"] == "result"]
    copied = next(c["data"]["value"] for c in calls if c["data"]["ok"])
    assert copied["name"] == "df"
    assert copied["type"] == "DataFrame"
    blob = log.parent / copied["blob"]
    assert blob.stat().st_size == copied["bytes"]
    assert "payload" not in log.read_text()  # the bytes are in the blob only
    # The trace and the export say what was copied.
    said = f"copied df (DataFrame, {copied['bytes']:,} bytes) from the kernel of {PATH}"
    _, detail = call(fetch, "agent", "runs", run_id)
    [cell] = [step for step in detail["steps"] if step["type"] == "cell"]
    assert cell["copies"] == [f"{said}: {copied['blob']}"]
    _, exported = call(fetch, "agent", "runs", run_id, "notebook")
    notes = [c["source"] for c in exported["cells"] if c["cell_type"] == "markdown"]
    assert any(said in note for note in notes), notes
    render_show(show_run(read_log(log)))  # jupyter agent trace show
    assert f"  ~ {said}: {copied['blob']}" in capsys.readouterr().out.splitlines()
    person.close()
    report = verify_run(log)
    assert report.identical, report


def _approval(agent_service: Any, spin: Any, chat_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for event in agent_service.events.since(chat_id, 0):
            if event["type"] == "approval":
                return dict(event)
        spin(0.05)
    raise AssertionError("no approval event")


def test_run_waits_for_the_person_and_runs_only_after(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    person: Person,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat_id, run_id = _send(fetch, "add one to n in my kernel")
    approval = _approval(agent_service, spin, chat_id)
    assert approval["kind"] == "kernel"
    assert approval["code"] == "m = n + 1\nprint('in person', m)"
    assert "m" not in person.look()[0]  # nothing ran before the answer
    code, _ = call(
        fetch, "agent", "runs", run_id, "approvals", approval["approval_id"], method="POST",
        body={"approve": True},
    )  # fmt: skip
    assert code == 200
    wait_turn(fetch, spin, chat_id, run_id)
    assert "RAN ok in person 42" in _prints(_log(agent_service, run_id))
    assert "m" in person.look()[0]
    render_show(show_run(read_log(_log(agent_service, run_id))))
    shown = capsys.readouterr().out
    assert "approval (code for the person's kernel in cell c1): approved by the person" in shown
    assert "  > m = n + 1" in shown
    person.close()
    report = verify_run(_log(agent_service, run_id))
    assert report.identical, report


def test_a_denial_or_a_stop_reaches_the_model_as_a_refusal(
    fetch: Any, spin: Any, agent_service: Any, person: Person
) -> None:
    chat_id, run_id = _send(fetch, "add one to n in my kernel")
    approval = _approval(agent_service, spin, chat_id)
    code, _ = call(
        fetch, "agent", "runs", run_id, "approvals", approval["approval_id"], method="POST",
        body={"approve": False},
    )  # fmt: skip
    assert code == 200
    wait_turn(fetch, spin, chat_id, run_id)
    [cell] = [
        json.loads(line)["data"]
        for line in _log(agent_service, run_id).read_text().splitlines()[1:]
        if '"cell.run"' in line and '"result"' in line
    ]
    said = "The person denied running that code in the kernel of work/person.ipynb."
    assert said in json.dumps(cell["error"])  # the cell's AppCallError, as the model reads it
    assert "m" not in person.look()[0]
    # A stop while the card waits: the wait ends at once, nothing runs.
    chat_id, run_id = _send(fetch, "add one to n in my kernel, again")
    _approval(agent_service, spin, chat_id)
    code, _ = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST",
        body={"control": {"kind": "break"}},
    )  # fmt: skip
    assert code in (200, 202)
    wait_turn(fetch, spin, chat_id, run_id)
    assert "RAN" not in _prints(_log(agent_service, run_id))
    assert "m" not in person.look()[0]
