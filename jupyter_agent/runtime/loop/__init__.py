"""The driver: performs the effects a program yields (model calls, cells, app calls) and logs
each (:mod:`.driver`, :mod:`.tools`, :mod:`.model_calls`, :mod:`.apphost`, :mod:`.cell_events`).
May import core/, llm/, trace/, runtime/kernels and the other runtime concerns' performers.
Used by runtime/runs.
"""
