"""The agent kernel: an IPython kernel whose namespace is run_cell's environment, with the
in-cell apps' kernel side (values, ``sh``, the ``mcp`` and ``notebook`` proxies, capture)
and the recorded host an exported notebook re-runs with (``recorded``).
Runs in its own process: imports ipykernel, core/ and the top-level contracts only.
Used by no module: the pool starts it by its kernelspec (``python -m jupyter_agent.kernel``).
"""
