"""Agent kernels on a real ``jupyter kernelgateway``, driven through a real ``jupyter server``.

One gateway (its own Jupyter dirs, the agent kernelspec installed there under its own name
with the project's CLI, a marker variable only it has) and one server started with the
gateway's URL and token (``GatewayClient.url`` / ``auth_token``: what ``--gateway-url`` and
``--GatewayClient.auth_token`` set), a warm pool of two, the fake provider for the model.
Each test is a real run whose scripted cells prove one point: the cell and ``bash`` ran in
the gateway's process tree, an in-cell app call goes over stdin and back, a cell past
``cell_timeout_s`` is interrupted and the run goes on, a hard break ends a sleeping run at
once, and the pool's kernels wait on the gateway before the first run and a run takes one.
At the end the server's stop leaves no kernel on the gateway and the gateway's stop no
process of its group.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.deploy.gateway import MARKER_VAR, Gateway
from tests.faults.server import FaultServer, wait_for

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(300)]

CELL_TIMEOUT_S = 6.0
POOL = 2
# The interrupt (a REST call to the gateway) and the reply, on a loaded machine
GRACE_S = 8.0


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = Gateway(Path(tmp_path_factory.mktemp("gateway")))
    try:
        gw.start()
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def pool_before_first_run() -> dict[str, Any]:
    return {}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    fake: FakeProvider,
    gateway: Gateway,
    pool_before_first_run: dict[str, Any],
) -> Iterator[FaultServer]:
    srv = FaultServer(
        Path(tmp_path_factory.mktemp("server")),
        fake,
        {"cell_timeout_s": CELL_TIMEOUT_S, "pool_size": POOL},
        config={**gateway.server_config(), "KernelPool": {"kernel_name": gateway.kernel_name}},
    )
    srv.start()
    try:
        warm = wait_for("the warm pool on the gateway", lambda: _warm(gateway))
        pool_before_first_run["ids"] = {k["id"] for k in warm}
        pool_before_first_run["names"] = {k["name"] for k in warm}
        yield srv
    finally:
        srv.stop()
    # The server's stop shut its kernels down on the gateway.
    wait_for("no kernel left on the gateway", lambda: not gateway.kernels(), 60)


def _warm(gateway: Gateway) -> list[dict[str, Any]] | None:
    """The gateway's kernels once ``POOL`` of them are idle and connected (warm), else None."""
    kernels = gateway.kernels()
    ready = [k for k in kernels if k["execution_state"] == "idle" and k["connections"] >= 1]
    return kernels if len(kernels) == POOL and len(ready) == POOL else None


def _run(server: FaultServer, fake: FakeProvider, script: list[dict[str, Any]]) -> dict[str, Any]:
    """One run of ``script``; its full detail (with ``turn``)."""
    fake.load(script)
    with server.client() as client:
        chat_id = client.create_chat("gateway")["id"]
    turn = server.send_and_wait(chat_id, "Go.", timeout_s=180)
    with server.client() as client:
        detail = client.run(turn["run_id"], full=True)
    detail["turn"] = turn
    return detail


def _results(detail: dict[str, Any], name: str) -> list[Any]:
    return [e["result"] for e in detail["effects"] if e["name"] == name]


def _stdout(result: dict[str, Any]) -> str:
    return "".join(o.get("text", "") for o in result["outputs"] if o.get("name") == "stdout")


def test_the_pool_is_warm_on_the_gateway_and_a_run_takes_one(
    server: FaultServer, fake: FakeProvider, gateway: Gateway, pool_before_first_run: dict[str, Any]
) -> None:
    assert pool_before_first_run["names"] == {gateway.kernel_name}
    code = "import sys\nprint(sys.argv)"
    detail = _run(server, fake, [{"cells": [code]}, {"text": "Done."}])
    (cell,) = _results(detail, "cell.run")
    # jupyter_server names a kernel's connection file after the kernel's id
    found = re.search(r"kernel-([0-9a-f-]{36})\.json", _stdout(cell))
    assert found, cell
    assert found.group(1) in pool_before_first_run["ids"], (found.group(1), pool_before_first_run)
    # The run's kernel is shut down on the gateway and the pool refilled there.
    warm = wait_for("the pool refilled on the gateway", lambda: _warm(gateway))
    assert found.group(1) not in {k["id"] for k in warm}
    log = server.log_text
    assert log.count("agent kernels run on the gateway at") == 1, log
    assert gateway.token not in log


def test_the_cell_and_bash_run_under_the_gateway(
    server: FaultServer, fake: FakeProvider, gateway: Gateway
) -> None:
    assert gateway.proc is not None
    code = f"import os\nprint(os.environ.get({MARKER_VAR!r}), os.getpid(), os.getppid())"
    detail = _run(
        server,
        fake,
        [
            {"cells": [code]},
            {"text": "And the shell.", "bash": [f"echo ${MARKER_VAR} $PPID"]},
            {"text": "Done."},
        ],
    )
    assert detail["turn"]["llm"]["endCause"] == "done", detail["turn"]
    (cell,) = _results(detail, "cell.run")
    assert cell["error"] is None, cell
    marker, pid, ppid = _stdout(cell).split()
    assert marker == gateway.marker  # the server's own environment has no marker
    assert int(ppid) == gateway.proc.pid  # the gateway launched the kernel
    (bash,) = _results(detail, "bash.run")
    assert bash["returncode"] == 0, bash
    assert bash["stdout"]["text"].split() == [gateway.marker, pid]  # a child of that kernel


def test_an_in_cell_app_call_goes_over_stdin_and_back(
    server: FaultServer, fake: FakeProvider
) -> None:
    code = (
        "saved = memory.save('Gateway kernels answer app calls.', category='project')\n"
        "print(saved.startswith('mem_'), [m['text'] for m in memory.list()])"
    )
    detail = _run(server, fake, [{"cells": [code]}, {"text": "Done."}])
    (cell,) = _results(detail, "cell.run")
    assert cell["error"] is None, cell
    assert _stdout(cell).strip() == "True ['Gateway kernels answer app calls.']"
    calls = [(c["app"], c["method"], c["ok"]) for c in cell["app_calls"]]
    assert calls == [("memory", "save", True), ("memory", "list", True)]
    with server.client() as client:
        assert [m["text"] for m in client.list_memories()] == ["Gateway kernels answer app calls."]


def test_a_cell_past_its_timeout_is_interrupted_and_the_run_goes_on(
    server: FaultServer, fake: FakeProvider
) -> None:
    detail = _run(
        server,
        fake,
        [
            {"cells": ["x = 41\nimport time\nprint('sleeping', flush=True)\ntime.sleep(600)"]},
            {"cells": ["print(x + 1)"]},
            {"text": "Done."},
        ],
    )
    assert detail["turn"]["llm"]["endCause"] == "done", detail["turn"]
    slept, after = _results(detail, "cell.run")
    assert slept["error"]["ename"] == "CellTimeout", slept
    assert "interrupted; the namespace is kept" in slept["error"]["evalue"]
    assert CELL_TIMEOUT_S <= slept["duration_s"] < CELL_TIMEOUT_S + GRACE_S, slept
    assert _stdout(slept).startswith("sleeping")
    assert after["error"] is None, after
    assert _stdout(after).strip() == "42", after


def test_a_hard_break_ends_a_sleeping_run_at_once(
    server: FaultServer, fake: FakeProvider, gateway: Gateway
) -> None:
    fake.load(
        [
            {"cells": ["import time\nprint('sleeping', flush=True)\ntime.sleep(600)"]},
            {"text": "Never reached."},
        ]
    )
    with server.client() as client:
        chat_id = client.create_chat("gateway break")["id"]
        run_id = client.send(chat_id, "Sleep.")["run_id"]
    wait_for(
        "the run's kernel busy on the gateway",
        lambda: any(k["execution_state"] == "busy" for k in gateway.kernels()),
    )
    with server.client() as client:
        client.break_run(run_id, hard=True)
    broke = time.monotonic()
    turn = wait_for("the broken run's turn", lambda: server.turn_of(chat_id, run_id), 30)
    took = time.monotonic() - broke
    assert took < CELL_TIMEOUT_S / 2, took  # at once: not the cell's timeout
    assert turn["interrupted"] is True, turn
    assert (turn["llm"]["endCause"], turn["llm"]["modelCalls"]) == ("break_hard", 1), turn
    assert "Never reached." not in [r["text"] for r in turn["replies"]], turn
    # The broken run's kernel goes; the pool is back to its size on the gateway.
    wait_for("the pool back on the gateway, none busy", lambda: _warm(gateway))
