"""The agent kernel in the person's environment (issue 28, item 4): ``KernelPool.python``.

A second environment is made in the test: a venv (``--without-pip``) whose site-packages
lends it, by links, exactly what ``ipykernel``, ``pydantic`` and ``numpy`` import from this
one, and nothing else: no ``jupyter_server``, no ``jupyter_agent`` (the pool lends that
through ``PYTHONPATH``). No network is used. Then, through a real Jupyter server and the
fake provider:

- ``KernelPool.python = <that venv's python>``: the agent cell's ``sys.executable`` is the
  venv's, numpy imports, jupyter_server does not;
- ``auto``: a kernelspec of the venv, a notebook session of the person in it (``POST
  /api/sessions``), a message viewing that notebook: the cell runs in the venv; a message
  with no view runs in the server's interpreter;
- an environment without ipykernel or pydantic is refused with a message naming them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.runtime.environments.interpreters import EnvironmentUnfit, make_shim, probe
from tests.server.helpers import call, new_chat, wait_turn

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.usefixtures("server_kernelspec"),
    pytest.mark.sqlite_only("the environment, not the store, is under test"),
]

CELL = (
    "import sys\n"
    "import numpy\n"
    "print('EXE', sys.executable)\n"
    "try:\n"
    "    import jupyter_server\n"
    "    print('JS yes')\n"
    "except ImportError:\n"
    "    print('JS no')\n"
)
_CLOSURE = """
import json, sys, sysconfig
import ipykernel.kernelapp, ipykernel.ipkernel, ipykernel_launcher, numpy, IPython
import matplotlib_inline.backend_inline
import jupyter_agent.kernel.kernel  # what the agent kernel imports: pydantic's lazy parts too
from jupyter_agent.codec import load
from jupyter_agent.core.digest.cells import CellResult
load(CellResult, {"cell_id": "c1"})
site = sysconfig.get_paths()["purelib"]
tops = set()
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    if path.startswith(site + "/"):
        tops.add(path[len(site) + 1 :].split("/")[0])
# Their metadata too: a package may ask importlib.metadata for another's version.
import importlib.metadata as md
infos = set()
for dist in md.distributions(path=[site]):
    named = {str(f).split("/")[0] for f in (dist.files or [])}
    if named & tops:
        infos.add(dist._path.name)  # type: ignore[attr-defined]
print(json.dumps(sorted(tops | infos)))
"""


def _venv(base: Path, *, lend: bool) -> Path:
    """A venv at ``base`` (with the kernel's packages lent by links when ``lend``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True)
    python = base / "bin" / "python"
    if lend:
        site = Path(sysconfig.get_paths()["purelib"])
        tops = json.loads(
            subprocess.run(
                [sys.executable, "-c", _CLOSURE], capture_output=True, text=True, check=True
            ).stdout
        )
        lent = base / "lent"
        lent.mkdir()
        for top in tops:
            if top.startswith(("jupyter_server", "jupyter_agent", "__editable__")):
                continue
            (lent / top).symlink_to(site / top)
        target = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        Path(target, "lent.pth").write_text(str(lent) + "\n")
    return python


@pytest.fixture(scope="module")
def env2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = _venv(tmp_path_factory.mktemp("env") / "env2", lend=True)
    checks = (
        "import numpy, ipykernel, pydantic\n"
        "try:\n import jupyter_server\nexcept ImportError:\n print('ok')"
    )
    out = subprocess.run([str(python), "-c", checks], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    return python


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"cells": [CELL]}, {"text": "Done."}], "per_turn": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


@pytest.fixture
def pool_python(env2: Path) -> str:
    return str(env2)


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any], pool_python: str) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": agent_config,
        "KernelPool": {"python": pool_python},
    }


def _printed(fetch: Any, spin: Any, agent_service: Any, view: dict[str, Any] | None) -> str:
    chat_id = new_chat(fetch)
    body: dict[str, Any] = {"text": "where do you run?"}
    if view is not None:
        body["view"] = view
    code, answer = call(fetch, "agent", "chats", chat_id, "messages", method="POST", body=body)
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    [log] = Path(agent_service.manager.runs_dir).rglob(f"{answer['run_id']}.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    return "".join(str(p.get("text", p)) for p in cell["prints"]) + json.dumps(cell.get("error"))


def test_a_fixed_interpreter_runs_the_agent_kernel(
    fetch: Any, spin: Any, agent_service: Any, env2: Path
) -> None:
    printed = _printed(fetch, spin, agent_service, None)
    assert f"EXE {env2}" in printed
    assert "JS no" in printed


@pytest.mark.parametrize("pool_python", ["auto"])
def test_auto_follows_the_viewed_notebooks_kernel(
    fetch: Any, spin: Any, agent_service: Any, env2: Path, jp_root_dir: Path, jp_data_dir: Path
) -> None:
    spec = jp_data_dir / "kernels" / "env2"
    spec.mkdir(parents=True)
    argv = [str(env2), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Env 2", "language": "python"})
    )
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "geo.ipynb")
    code, session = call(
        fetch, "api", "sessions", method="POST",
        body={"path": "geo.ipynb", "type": "notebook", "name": "g", "kernel": {"name": "env2"}},
    )  # fmt: skip
    assert code == 201
    try:
        assert f"EXE {env2}" in _printed(fetch, spin, agent_service, {"path": "geo.ipynb"})
        # No notebook in view: the server's own interpreter.
        assert f"EXE {sys.executable}" in _printed(fetch, spin, agent_service, None)
    finally:
        call(fetch, "api", "sessions", session["id"], method="DELETE")


def test_an_environment_without_the_kernels_packages_is_named(tmp_path: Path) -> None:
    bare = _venv(tmp_path / "bare", lend=False)
    with pytest.raises(EnvironmentUnfit) as refused:
        probe(str(bare), make_shim(tmp_path / "shim"))
    message = str(refused.value)
    assert f"the environment of {bare} lacks ipykernel, pydantic" in message
    assert f"{bare} -m pip install 'ipykernel>=6 pydantic>=2'" in message
