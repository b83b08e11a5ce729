"""The agent as an MCP server inside Jupyter: the endpoint (streamable HTTP bridged into a
tornado handler), its tools and their schemas. May import jupyter_server, tornado, the
``mcp`` SDK and runtime/. Used by server/app.py and server/routes.py.
"""
