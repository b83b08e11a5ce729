"""``docs/api.md`` cannot drift from the code: its routes are the server's (paths, methods
and, asked of a real server, the permission each one checks) and its events are
``runtime/events.py``'s (types, fields, which are kept for ``?since=``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError

from jupyter_agent.runtime.events import EVENT_FIELDS, EVENT_TYPES, LIVE_ONLY
from jupyter_agent.server.routes import default_handlers
from tests.server.conftest import agent_app

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
README = PAGE.parents[1] / "README.md"
_METHODS = ("get", "post", "put", "patch", "delete")
_CODE = re.compile(r"`([^`]*)`")


def _table(name: str) -> list[list[str]]:
    """The rows (cells stripped) of the table between ``<!-- name`` and ``<!-- /name -->``."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name}\b.*?-->(.*?)<!-- /{name} -->", text, re.S)
    assert match, f"docs/api.md has no <!-- {name} --> table"
    rows = []
    for line in match.group(1).strip().splitlines()[2:]:  # after the header and the rule
        assert line.startswith("|"), line
        assert line.endswith("|"), line
        rows.append([cell.strip() for cell in line[1:-1].split("|")])
    return rows


def _code(cell: str) -> list[str]:
    return _CODE.findall(cell)


def documented_routes() -> dict[tuple[str, str], tuple[str, str]]:
    """``{(METHOD, path): (permission, resource)}`` from the page (the first code span of
    each cell; a permission cell "`write` on `agent_programs`" names its resource, else
    it is ``agent``)."""
    routes: dict[tuple[str, str], tuple[str, str]] = {}
    for row in _table("routes"):
        method, path = (_code(cell)[0] for cell in row[:2])
        on = re.match(r"`([^`]*)` on `([^`]*)`", row[2])
        permission = (on.group(1), on.group(2)) if on else (_code(row[2])[0], "agent")
        assert (method, path) not in routes, f"{method} {path} is documented twice"
        routes[(method, path)] = permission
    return routes


def _template(pattern: str) -> str:
    """``/agent/runs/(?P<run_id>[^/]+)`` -> ``agent/runs/{run_id}``."""
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern).lstrip("/")


def registered_routes(handlers: list[tuple[str, Any]]) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of every method the agent's handlers define (not tornado's)."""
    routes = set()
    for pattern, handler in handlers:
        for name in _METHODS:
            method = getattr(handler, name, None)
            if method is not None and method.__module__.startswith("jupyter_agent."):
                routes.add((name.upper(), _template(pattern)))
    return routes


def test_the_page_lists_every_route_and_only_those() -> None:
    documented = set(documented_routes())
    registered = registered_routes(default_handlers)
    assert registered - documented == set(), "routes missing from docs/api.md"
    assert documented - registered == set(), "docs/api.md lists routes that do not exist"


def test_the_page_documents_every_event_type_with_its_fields() -> None:
    rows = _table("events")
    types = [_code(row[0])[0] for row in rows]
    assert types == list(EVENT_TYPES)
    for row in rows:
        type_ = _code(row[0])[0]
        assert _code(row[1]) == list(EVENT_FIELDS[type_]), type_
        assert row[2] == ("no" if type_ in LIVE_ONLY else "yes"), type_


def test_the_page_has_its_contract_notes_and_the_readme_links_it() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for needle in (
        "cell_output",
        "cell_end.status",
        "timed_out",
        'routed: "run"',
        "key_bindings",
        "key_set",
    ):
        assert needle in text, needle
    assert "docs/api.md" in README.read_text(encoding="utf-8")


# --- the permission of each route, asked of a real server ---------------------------------


class RecordingAuthorizer(Authorizer):  # type: ignore[misc]
    """Refuses everything, recording the action each request asked for."""

    asked: ClassVar[list[tuple[str, str, str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        request = handler.request
        self.asked.append((request.method, request.path, action, resource))
        return False


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_agent": True},
            "authorizer_class": RecordingAuthorizer,
        },
        "JupyterAgent": {"pool_size": 0},
    }


IDS = {
    "chat_id": "chat_01DOC",
    "run_id": "run_01DOC",
    "other": "run_02DOC",
    "memory_id": "mem_01DOC",
    "approval_id": "appr_01DOC",
    "name": "toolcaller",
    "proposal_id": "p01doc",
    "eval_id": "eval_01DOC",
}


def test_each_route_asks_the_documented_permission(fetch: Any, jp_serverapp: Any) -> None:
    # The routes the running extension registered are the ones the page lists.
    assert registered_routes(agent_app(jp_serverapp).handlers) == set(documented_routes())
    for (method, path), permission in documented_routes().items():
        RecordingAuthorizer.asked.clear()
        url = path.format(**IDS)
        body = None if method in ("GET", "DELETE") else b"{}"
        with pytest.raises(HTTPClientError) as info:
            fetch(*url.split("/"), method=method, body=body, allow_nonstandard_methods=True)
        assert info.value.code == 403, (method, path)
        asked = [(a, r) for m, p, a, r in RecordingAuthorizer.asked if p == f"/{url}"]
        assert asked, f"{method} {path} asked for no permission"
        assert asked[0] == permission, (method, path, asked)
