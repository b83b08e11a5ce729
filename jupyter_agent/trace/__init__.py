"""Traces: the JSONL effect log of each run, its replay, and its export as a notebook."""
