"""The Jupyter Server extension: the app (traits, start and stop), the REST and WebSocket
handlers, one module per concern (chats, runs, approvals, memory, proposals, programs,
events; mcp/ the MCP endpoint), each calling its concern's service of
:class:`~jupyter_agent.runtime.services.Services`; auth/ (authorizer, owners, isolation).
May import jupyter_server, tornado and every layer below; handlers never import the app
module (they read it through :class:`~jupyter_agent.server.base.AgentHost`). Used by
Jupyter Server, through the package's extension points.
"""
