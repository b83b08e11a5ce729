"""Making a chat's chunk summaries: the summary runs' driver and the background jobs that
start them. May import core/history, runtime/runs and runtime/programs, the store.
Used by the assembly and the run manager.
"""
