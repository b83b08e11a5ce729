"""The person's kernel is its owner's only (issue 28): two identities on one real Jupyter
Server (:class:`tests.plugins.identities.TokenUsersIdentityProvider`). Alice opens a
notebook with a kernel (``POST /api/sessions`` as alice); bob's agent asking for that
notebook's variables is refused, alice's gets them. And under ``approval = none``,
``notebook.run`` is refused with a message saying how to allow it, nothing run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.plugins.identities import identity_server_config
from tests.server.helpers import call

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("server_kernelspec")]

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2"}
PATH = "shared/alice.ipynb"
CELL = """\
try:
    print('VARS', notebook.variables(path='shared/alice.ipynb').names)
except Exception as e:
    print('REFUSED', e)
try:
    notebook.run('secret_total = 0', path='shared/alice.ipynb')
except Exception as e:
    print('RUN', e)
"""


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"cells": [CELL]}, {"text": "Done."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "approval": "none"}


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    return identity_server_config(agent_config, TOKENS)


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"token {TOKENS[name]}"}


def _turn_prints(fetch: Any, spin: Any, agent_service: Any, who: str) -> str:
    code, chat = call(fetch, "agent", "chats", method="POST", body={"title": who}, headers=_as(who))
    assert code == 201
    code, answer = call(
        fetch, "agent", "chats", chat["id"], "messages", method="POST",
        body={"text": "what's in alice's notebook?"}, headers=_as(who),
    )  # fmt: skip
    assert code == 202
    run_id = answer["run_id"]
    for _ in range(2400):
        _, now = call(fetch, "agent", "chats", chat["id"], headers=_as(who))
        if any(t["run_id"] == run_id for t in now["turns"]) and now["active_run_id"] != run_id:
            break
        spin(0.05)
    [log] = Path(agent_service.manager.runs_dir).rglob(f"{run_id}.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    return "".join(str(p.get("text", p)) for p in cell["prints"])


def test_only_the_kernels_owner_looks_and_run_needs_a_policy_that_asks(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    jp_root_dir: Path,
    jp_serverapp: Any,
    jp_asyncio_loop: Any,
) -> None:
    (jp_root_dir / "shared").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / PATH)
    code, session = call(
        fetch, "api", "sessions", method="POST", headers=_as("alice"),
        body={"path": PATH, "type": "notebook", "name": "a", "kernel": {"name": "python3"}},
    )  # fmt: skip
    assert code == 201
    km = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    client = km.client()
    client.start_channels()
    try:

        async def setup() -> None:
            await client.wait_for_ready(timeout=60)
            await client.execute("secret_total = 1234", reply=True, timeout=60)

        jp_asyncio_loop.run_until_complete(setup())
        bob = _turn_prints(fetch, spin, agent_service, "bob")
        assert "REFUSED the kernel of shared/alice.ipynb is not yours" in bob
        assert "secret_total" not in bob.split("RUN")[0]
        alice = _turn_prints(fetch, spin, agent_service, "alice")
        assert "VARS ['secret_total']" in alice
        assert "RUN notebook.run changes the person's kernel" in alice
        assert "'writes' or 'every_cell'" in alice

        async def value() -> str:
            reply = await client.execute(
                "", silent=True, user_expressions={"v": "secret_total"}, reply=True, timeout=60
            )
            return str(reply["content"]["user_expressions"]["v"]["data"]["text/plain"])

        assert jp_asyncio_loop.run_until_complete(value()) == "1234"  # nothing ran
    finally:
        client.stop_channels()
        call(fetch, "api", "sessions", session["id"], method="DELETE", headers=_as("alice"))
