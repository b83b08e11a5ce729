""":class:`PersonKernels.find` and ``look``'s refusals, with stand-ins for the server's session
manager, kernelspecs and kernel manager (the real ones: ``tests/server/test_person_kernel*``).

Each refusal is an ``AgentError`` whose message the model can act on: no kernel attached,
another owner's kernel, a non-Python kernel, a gateway, and a busy kernel answered at once
(no client is even made).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from jupyter_agent.exceptions import AgentError
from jupyter_agent.runtime.notebook.person_kernels import KernelBusy, KernelOwners, PersonKernels


@dataclass
class Spec:
    language: str


class Sessions:
    def __init__(self, *sessions: dict[str, Any]) -> None:
        self.sessions = list(sessions)

    async def list_sessions(self) -> list[dict[str, Any]]:
        return self.sessions


class Specs:
    def get_kernel_spec(self, name: str) -> Spec:
        return Spec({"python3": "python", "ir": "R"}[name])


class Kernel:
    execution_state = "busy"
    last_activity = None

    def client(self, **kw: Any) -> Any:
        raise AssertionError("a busy kernel gets no client")


class Manager:
    def get_kernel(self, kernel_id: str) -> Kernel:
        return Kernel()


def session(path: str, name: str = "python3", sid: str = "s1", kid: str = "k1") -> dict[str, Any]:
    return {"id": sid, "path": path, "kernel": {"id": kid, "name": name}}


def kernels(*sessions: dict[str, Any], owners: KernelOwners | None = None, **kw: Any) -> Any:
    return PersonKernels(
        kernel_manager=Manager(),
        session_manager=Sessions(*sessions),
        kernel_specs=Specs(),
        owners=owners,
        **kw,
    )


def test_no_kernel_attached() -> None:
    with pytest.raises(AgentError, match=r"no kernel is attached to a\.ipynb"):
        asyncio.run(kernels(session("b.ipynb")).find("a.ipynb", owner=""))


def test_a_non_python_kernel_is_refused() -> None:
    with pytest.raises(AgentError, match=r"a R kernel \(ir\): the agent can look at Python"):
        asyncio.run(kernels(session("a.ipynb", "ir")).find("a.ipynb", owner=""))


def test_only_the_owners_kernel() -> None:
    owners = KernelOwners()
    owners.saw("session", "s1", "alice")
    found = kernels(session("a.ipynb"), owners=owners)
    assert asyncio.run(found.find("a.ipynb", owner="alice")).kernel_id == "k1"
    with pytest.raises(AgentError, match="is not yours"):
        asyncio.run(found.find("a.ipynb", owner="bob"))
    owners.saw("kernel", "k1", "bob")  # a kernel bob started, attached to alice's session
    assert asyncio.run(found.find("a.ipynb", owner="bob")).kernel_id == "k1"


def test_a_gateway_is_said_so() -> None:
    with pytest.raises(AgentError, match="kernel gateway"):
        asyncio.run(kernels(session("a.ipynb"), gateway=True).find("a.ipynb", owner=""))


def test_a_busy_kernel_is_answered_without_asking_it() -> None:
    pk = kernels(session("a.ipynb"))
    kernel = asyncio.run(pk.find("a.ipynb", owner=""))
    assert kernel.execution_state == "busy"
    with pytest.raises(KernelBusy, match="busy running a cell"):
        asyncio.run(pk.look(kernel, "variables", {}))
