"""MCP servers the agent uses as a client: their config, connections, the hub that holds
them, results, and the in-cell ``mcp`` app. May import the ``mcp`` SDK, core/mcp, runtime/loop's
app host. Used by the assembly and the driver.
"""
