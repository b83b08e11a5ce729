"""The runtime (I/O allowed): one folder per concern (runs, loop, kernels, memory, history,
mcp, notebook, programs, settings), the assembly that builds the parts from the config, the
service the handlers call, the event bus, ids and secrets.
Imports core/, llm/, store/, trace/ and programs/; never server/, jupyter_server or tornado
(the server hands in its kernel manager). Used by server/ and cli/.
"""
