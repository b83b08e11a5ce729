"""Evals: a suite of cases (messages and their checks) run as runs of their own, tallied
and reported as a notebook (``POST agent/evals``, ``jupyter agent eval``). Imports
runtime/loop (the fed runs a rerun is made of), runtime/runs (the run service: programs,
configs, recorded runs), runtime/notebook (safe paths, the trace folder's writer), trace/
(a recorded run's turn, notebook nodes) and core/; used by server/ (the handlers) and
runtime/assembly.
"""
