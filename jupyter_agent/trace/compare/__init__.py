"""Comparing runs from their effect logs (pure): :mod:`.diff`, where two runs first part.
Imports trace/ (the log reader, the stats) and the top-level contracts, nothing else. Used
by runtime/runs (``GET agent/runs/{a}/diff/{b}``) and cli/ (``jupyter agent trace diff``).
"""
