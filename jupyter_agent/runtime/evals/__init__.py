"""Evals: a suite of cases (messages and their checks) run as runs of their own, tallied
and reported as a notebook (``POST agent/evals``, ``jupyter agent eval``)."""
