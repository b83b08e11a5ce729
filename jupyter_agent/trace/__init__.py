"""Traces: the JSONL effect log of each run (:mod:`.log`), its replay and verification,
its views (steps, cells, stats, ``trace show``) and its export as a notebook.
Imports core/, llm/ and the top-level contracts (nbformat for the export), never the store.
Used by runtime/runs and runtime/loop (writing logs), programs/ (deploy checks) and cli/.
"""
