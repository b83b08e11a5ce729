"""The pure core: the loop, effects, prompt assembly, digests, the boot window.

Nothing in this package does I/O or imports asyncio, httpx, tornado, sqlmodel, ipykernel,
jupyter_client or jupyter_server: it yields effects and receives their results.
"""
