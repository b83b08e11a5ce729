"""The structured cell result and its digest: what a cell gave (:mod:`.cells`), its status,
the text the model reads (:mod:`.render`, :mod:`.parts`, :mod:`.tracebacks`, budgeted by
:mod:`.options`) and the record the driver keeps (:mod:`.record`).
Pure: imports only core/ base modules (tokens, paths, ceilings) and the top-level contracts.
Used by the loop, the driver, the notebook digest, the trace views and the notebook export.
"""
