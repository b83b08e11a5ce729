"""The test suite's MCP server: one tool of each kind the hub must handle (issue 18).

- ``add(a, b)``: read-only (``readOnlyHint``), structured output ``{"sum": a + b}``;
- ``echo(text)``: text content (read-only);
- ``image()``: a 1x1 PNG image content (read-only);
- ``write_note(text)``: mutating: appends a line to the file ``$MCP_DEMO_NOTES`` (and
  answers how many lines it holds);
- ``write_then_crash(text)``: mutating: appends, then exits (code 4) without answering;
- ``fail()``: an ``isError`` result;
- ``slow(seconds)``: sleeps, then answers ``"slept"``;
- ``crash()``: exits the process (code 3) without answering;
- ``resource()``: an embedded text resource; ``big(n)``: a text of n characters;
- ``whoami()``: the value of ``$MCP_DEMO_SECRET`` (a credential the hub must scrub);
- ``pid()``: the server process's id (tests check it is gone after ``aclose``).

``python server.py``: stdio; ``python server.py --http PORT``: streamable HTTP on
127.0.0.1:PORT at ``/mcp``. Not part of the package: a test fixture.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import EmbeddedResource, TextResourceContents, ToolAnnotations

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

READ_ONLY = ToolAnnotations(read_only_hint=True)

server = MCPServer(name="mcp-demo", version="1")


@server.tool(description="Add two integers.", annotations=READ_ONLY)
def add(a: int, b: int) -> dict[str, int]:
    return {"sum": a + b}


@server.tool(description="Answer the text back.", annotations=READ_ONLY, structured_output=False)
def echo(text: str) -> str:
    return text


@server.tool(description="A tiny PNG image.", annotations=READ_ONLY)
def image() -> Image:
    return Image(data=PNG, format="png")


@server.tool(description="Append a line to the notes file.", structured_output=False)
def write_note(text: str) -> str:
    path = os.environ["MCP_DEMO_NOTES"]
    with open(path, "a", encoding="utf-8") as notes:
        notes.write(text + "\n")
    with open(path, encoding="utf-8") as notes:
        return f"{sum(1 for _ in notes)} notes"


@server.tool(description="Append a line, then exit the process.", structured_output=False)
def write_then_crash(text: str) -> str:
    write_note(text)
    os._exit(4)


@server.tool(description="Always fails.", annotations=READ_ONLY)
def fail() -> str:
    raise ToolError("the demo tool failed on purpose")


@server.tool(description="Sleep, then answer.", annotations=READ_ONLY, structured_output=False)
async def slow(seconds: float = 1.0) -> str:
    await asyncio.sleep(seconds)
    return "slept"


@server.tool(description="Exit the server process.", annotations=READ_ONLY)
def crash() -> str:
    os._exit(3)


@server.tool(description="The demo's credential.", annotations=READ_ONLY, structured_output=False)
def whoami() -> str:
    return "token=" + os.environ.get("MCP_DEMO_SECRET", "")


@server.tool(description="A text resource.", annotations=READ_ONLY, structured_output=False)
def resource() -> EmbeddedResource:
    contents = TextResourceContents(uri="demo://notes", mime_type="text/plain", text="the notes")
    return EmbeddedResource(type="resource", resource=contents)


@server.tool(
    description="A long text of n characters.", annotations=READ_ONLY, structured_output=False
)
def big(n: int) -> str:
    return "x" * n


@server.tool(description="The server's process id.", annotations=READ_ONLY, structured_output=False)
def pid() -> str:
    return str(os.getpid())


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on this port")
    options = parser.parse_args(argv)
    if options.http:
        return server.run("streamable-http", host="127.0.0.1", port=options.http)
    return server.run()


if __name__ == "__main__":
    main()
