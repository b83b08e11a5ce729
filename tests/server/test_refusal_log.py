"""A refused agent request is ONE log line (issue 30, item 10: every 4xx was logged twice,
a warning then Jupyter's access line), which names the status, the route and why."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError


def _refused(fetch: Any, *parts: str, **kw: Any) -> int:
    with pytest.raises(HTTPClientError) as info:
        fetch(*parts, **kw)
    return int(info.value.code)


@pytest.fixture
def caplog(caplog: Any) -> Any:
    """pytest's, also hearing the extension's logger (the handlers' ``log``: it does
    not propagate to the root)."""
    logger = logging.getLogger("JupyterAgent")
    logger.addHandler(caplog.handler)
    yield caplog
    logger.removeHandler(caplog.handler)


def _lines(caplog: Any, needle: str, spin: Any) -> list[str]:
    spin(0.2)  # the access line is written once the answer went out
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and needle in r.getMessage()
    ]


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_a_refused_request_is_one_line(
    fetch: Any, agent_service: Any, caplog: Any, spin: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    assert _refused(fetch, "agent", "runs", "run_01NOPE") == 404
    lines = _lines(caplog, "/agent/runs/run_01NOPE", spin)
    assert len(lines) == 1, lines
    assert re.match(r"404 GET /(user/someone/)?agent/runs/run_01NOPE \(", lines[0])
    assert lines[0].endswith("ms: no trace for run 'run_01NOPE'")
    caplog.clear()
    code = _refused(
        fetch, "agent", "chats", method="POST", body="{}", headers={"Authorization": ""}
    )
    assert code == 403
    lines = _lines(caplog, "/agent/chats", spin)
    assert len(lines) == 1, lines
    assert re.match(r"403 POST /(user/someone/)?agent/chats \(", lines[0])
    assert lines[0].endswith(
        "ms: missing or invalid token: none was given (send the server's "
        "token in an 'Authorization: token T' header)"
    )


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_other_requests_keep_jupyters_access_line(
    fetch: Any, agent_service: Any, caplog: Any, spin: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    fetch("agent", "status")
    spin(0.2)
    lines = [r.getMessage() for r in caplog.records if "/agent/status" in r.getMessage()]
    assert len(lines) == 1, lines
    assert re.match(r"200 GET /(user/someone/)?agent/status \(", lines[0])
