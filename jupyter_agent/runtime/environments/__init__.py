"""The Python environments the agent's kernels may run in (``KernelPool.python``): which
interpreter a run uses, whether it can host the agent kernel, and the folder that lends it
the ``jupyter_agent`` package. May import runtime/notebook's person kernels (``auto``: the
environment of the viewed notebook's kernel). Used by the run driver and the kernel pool.
"""
