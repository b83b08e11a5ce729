"""The pure core: the loop, effects, prompt assembly, digests, the boot window.

Nothing in this package does I/O or imports asyncio, httpx, tornado, sqlalchemy, ipykernel,
jupyter_client or jupyter_server: it yields effects and receives their results. One folder
per concern (loop, digest, memory, history, notebook, mcp, events) over a few shared base
modules (turns, tokens, paths, ceilings, app_spec). Used by runtime/ (the driver performs
its effects), programs/, trace/ (replay, views) and deployed programs.
"""
