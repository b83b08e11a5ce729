"""The MCP catalogue as data: the tools of the configured MCP servers as the loop and the
prompt see them. Pure; imports core/loop's apps. Used by the loop, runtime/mcp and runtime/loop.
"""
