"""The MCP catalogue as data: the tools of the configured MCP servers as the loop and the
prompt see them. Pure; imports core/ base modules (an app's shape: core/app_spec.py). Used
by the loop, runtime/mcp and runtime/loop.
"""
