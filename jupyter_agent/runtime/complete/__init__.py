"""Inline completion in the person's notebooks and files (``POST agent/complete``): the
prompt from the code around the cursor, one model call on the ``complete`` tier, the text
streamed back, usage counted per owner, a per-owner rate. Not agent runs: no effect log,
no chat. Imports llm/, core/ (the pure ``chat`` call), runtime/notebook (the notebook's
other cells, the person's kernel variables) and runtime/runs (the tiers a run would get);
used by server/ (the handler) and runtime/assembly.
"""
