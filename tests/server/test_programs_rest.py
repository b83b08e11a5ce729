"""Programs over REST on a real Jupyter server: deploy, list, show, rollback; refused
deploys store nothing and leave the active version; deploying is an admin act (its own
``agent_programs`` permission, token sessions only by default, or off)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer

from jupyter_agent.programs.builtin import builtin_ref
from tests.server.helpers import call, refused

GOOD = """from jupyter_agent.core import loop

from .helpers import KEY


def program(run_id, chat_id):
    return (yield from loop.program(KEY, run_id, chat_id))
"""
FILES = {"program.py": GOOD, "helpers.py": 'KEY = "toolcaller@v8"\n'}
CONFIG = [{"pool_size": 0}]


def deploy(fetch: Any, files: dict[str, str], **extra: Any) -> Any:
    return call(
        fetch, "agent", "programs", "toolcaller", method="POST", body={"files": files, **extra}
    )


def active(fetch: Any) -> Any:
    _, listed = call(fetch, "agent", "programs")
    return next(p for p in listed["programs"] if p["name"] == "toolcaller")["active"]


@pytest.mark.parametrize("agent_config", CONFIG)
def test_deploy_list_show_rollback(fetch: Any, agent_service: Any) -> None:
    v6 = builtin_ref("toolcaller@v8").text
    assert active(fetch) == {"*": v6}
    code, answer = deploy(fetch, FILES)
    assert code == 201
    program = answer["program"]
    assert program["version"] == 9
    assert program["builtin"] is False
    assert program["ref"] == answer["active"]
    assert answer["active"].startswith("toolcaller@v9#")
    assert program["uses"] == ["llm@v1", "history@v1", "autorecall@v1"]
    assert active(fetch) == {"*": answer["active"]}
    # The registry a run resolves through sees it at once.
    resolved = agent_service.programs.resolve("agent", "toolcaller")
    assert resolved.ref.text == answer["active"]
    assert not resolved.builtin
    # The same files again: the same version.
    code, again = deploy(fetch, FILES)
    assert (code, again["program"]["version"]) == (201, 9)
    # A second version for one agent only.
    changed = {**FILES, "notes.md": "# plans\n"}
    code, planner = deploy(fetch, changed, agent="planner")
    assert planner["program"]["version"] == 10
    assert active(fetch) == {"*": answer["active"], "planner": planner["active"]}
    _, listed = call(fetch, "agent", "programs")
    names = {p["name"]: p for p in listed["programs"]}
    assert set(names) == {"toolcaller", "history", "llm", "autorecall"}
    assert names["llm"]["kind"] == "sub"
    assert [v["version"] for v in names["toolcaller"]["versions"]] == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
    ]
    # show: default the server-wide active one, with its files
    _, shown = call(fetch, "agent", "programs", "toolcaller")
    assert shown["version"] == 9
    assert shown["files"] == FILES
    _, shown6 = call(fetch, "agent", "programs", "toolcaller@v10")
    assert shown6["files"] == changed
    _, builtin = call(fetch, "agent", "programs", "toolcaller@v8")
    assert builtin["builtin"] is True
    assert builtin["files"] == {}
    assert "core/loop/machine.py" in builtin["modules"]
    refused(fetch, "agent", "programs", "toolcaller@v12", status=404)
    refused(fetch, "agent", "programs", "nope", status=404)
    # rollback: the planner layer back to the server-wide one, then the server to v6
    code, rolled = call(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        "rollback",
        method="POST",
        body={"agent": "planner"},
    )
    assert (code, rolled["active"]) == (200, answer["active"])
    code, rolled = call(
        fetch, "agent", "programs", "toolcaller", "rollback", method="POST", body={}
    )
    assert rolled["active"] == v6
    code, rolled = call(
        fetch, "agent", "programs", "toolcaller", "rollback", method="POST", body={"to": 10}
    )
    assert rolled["active"] == planner["active"]
    assert agent_service.programs.resolve("agent", "toolcaller").ref.version == 10
    refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        "rollback",
        method="POST",
        body={"to": 99},
        status=404,
    )


REFUSALS = [
    ({"program.py": "def program(:\n"}, "program.py line 1"),
    ({"helpers.py": "X = 1\n"}, "no entry point `program`"),
    ({"program.py": "def program(run_id, chat_id):\n    return 1\n"}, "not a generator"),
    (
        {
            "program.py": "from jupyter_agent.effects import Effect\n\n"
            "def program(run_id, chat_id):\n    yield Effect(name='foo.bar', data={})\n"
        },
        "unknown effect: 'foo.bar'",
    ),
    ({"program.py": GOOD, "../evil.py": "x = 1\n"}, "'..'"),
    ({"program.py": GOOD, "data.bin": "x"}, "only *.py"),
    ({"program.py": GOOD, ".hidden.py": "x = 1\n"}, "hidden"),
    ({f"m{i}.py": "" for i in range(65)}, "at most 64"),
    ({"program.py": GOOD, "big.txt": "x" * 1_000_001}, "at most 1000000"),
]


@pytest.mark.parametrize("agent_config", CONFIG)
def test_refused_deploys_store_nothing(fetch: Any, agent_service: Any) -> None:
    for files, words in REFUSALS:
        error = refused(
            fetch,
            "agent",
            "programs",
            "toolcaller",
            method="POST",
            body={"files": files},
            status=400,
        )
        assert error["reason"] == "program_refused", files
        assert words in error["message"], (words, error["message"])
    for name, words in (
        ("autorecall", "autorecall runs inside toolcaller"),
        ("llm", "inside"),
        ("foo", "unknown program family"),
    ):
        error = refused(
            fetch, "agent", "programs", name, method="POST", body={"files": FILES}, status=400
        )
        assert (error["reason"], words in error["message"]) == ("program_refused", True)
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body={"files": FILES, "extra": 1},
        status=400,
    )
    assert error["reason"] == "program_refused"
    assert agent_service.store.programs() == []
    assert agent_service.store.activations() == []
    assert active(fetch) == {"*": builtin_ref("toolcaller@v8").text}


@pytest.mark.parametrize("agent_config", [{"pool_size": 0, "max_body_bytes": 2000}])
def test_a_body_over_the_limit_is_413(fetch: Any) -> None:
    refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body={"files": {"program.py": "#" * 5000}},
        status=413,
    )


class NoDeployAuthorizer(Authorizer):  # type: ignore[misc]
    """Allows everything but the ``agent_programs`` resource."""

    asked: ClassVar[list[tuple[str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((action, resource))
        return resource != "agent_programs"


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": NoDeployAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_a_non_admin_is_refused(fetch: Any, agent_service: Any) -> None:
    code, _ = call(fetch, "agent", "programs")
    assert code == 200  # reads are `read` on `agent`
    refused(
        fetch, "agent", "programs", "toolcaller", method="POST", body={"files": FILES}, status=403
    )
    refused(
        fetch, "agent", "programs", "toolcaller", "rollback", method="POST", body={}, status=403
    )
    assert ("write", "agent_programs") in NoDeployAuthorizer.asked
    assert agent_service.store.programs() == []


def _cookie(fetch: Any, jp_serverapp: Any) -> dict[str, str]:
    """Headers of a browser session: the login cookie and its XSRF token, no token."""
    token = jp_serverapp.identity_provider.token
    response = fetch("agent", "status", params={"token": token}, headers={"Authorization": ""})
    cookies = dict(
        c.split(";", 1)[0].split("=", 1) for c in response.headers.get_list("Set-Cookie")
    )
    xsrf = cookies.get("_xsrf")
    if xsrf is None:  # the XSRF cookie comes with a page
        page = fetch(
            "tree", params={"token": token}, headers={"Authorization": ""}, raise_error=False
        )
        cookies.update(
            dict(c.split(";", 1)[0].split("=", 1) for c in page.headers.get_list("Set-Cookie"))
        )
        xsrf = cookies["_xsrf"]
    return {
        "Authorization": "",
        "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
        "X-XSRFToken": xsrf,
    }


@pytest.mark.parametrize("agent_config", CONFIG)
def test_the_browser_cannot_deploy_by_default(
    fetch: Any, jp_serverapp: Any, agent_service: Any
) -> None:
    headers = _cookie(fetch, jp_serverapp)
    # The session itself works for a POST (a chat), so the refusal is the deploy's own.
    code, _ = call(fetch, "agent", "chats", method="POST", body={"title": "t"}, headers=headers)
    assert code == 201
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body={"files": FILES},
        headers=headers,
        status=403,
    )
    assert error["reason"] == "browser_deploy"
    assert "program_deploy = 'browser'" in error["message"]
    assert agent_service.store.programs() == []


@pytest.mark.parametrize("agent_config", CONFIG)
@pytest.mark.parametrize(
    "header", [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors"), ("Origin", "x")]
)
def test_jupyterlab_with_the_token_cannot_deploy_by_default(
    fetch: Any, agent_service: Any, header: tuple[str, str]
) -> None:
    # JupyterLab's page holds the server token and @jupyterlab/services sends it with every
    # request: token-authenticated, yet a browser's (its fetch metadata gives it away).
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body={"files": FILES},
        headers=dict([header]),
        status=403,
    )
    assert error["reason"] == "browser_deploy"
    assert agent_service.store.programs() == []


@pytest.mark.parametrize("agent_config", [{"pool_size": 0, "program_deploy": "browser"}])
def test_browser_deploys_when_allowed(fetch: Any, jp_serverapp: Any) -> None:
    headers = _cookie(fetch, jp_serverapp)
    code, answer = call(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body={"files": FILES},
        headers=headers,
    )
    assert (code, answer["program"]["version"]) == (201, 9)


@pytest.mark.parametrize("agent_config", [{"pool_size": 0, "program_deploy": "off"}])
def test_deploy_off(fetch: Any, agent_service: Any) -> None:
    for parts in (("toolcaller",), ("toolcaller", "rollback")):
        error = refused(
            fetch,
            "agent",
            "programs",
            *parts,
            method="POST",
            body={"files": FILES} if len(parts) == 1 else {},
            status=403,
        )
        assert error["reason"] == "deploy_off"
    assert json.dumps(agent_service.store.programs()) == "[]"
