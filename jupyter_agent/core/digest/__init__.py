"""The structured cell result and its digest: what a cell gave (:mod:`.cells`), its status,
the text the model reads (:mod:`.render`, :mod:`.parts`, :mod:`.tracebacks`) and the
record the driver keeps.
Pure: imports only core/ base modules (tokens, paths, turns) and the top-level contracts.
Used by the loop, the driver, the trace views and the notebook export.
"""
