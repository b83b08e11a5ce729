"""The driver: performs the effects a program yields and logs each (:mod:`.driver` made of
:mod:`.effects`, :mod:`.run_inbox`, :mod:`.performers`, :mod:`.tools`; :mod:`.phase`: a run's
phase; :mod:`.apphost` with :mod:`.app_table`: in-cell app calls; :mod:`.model_calls`).
May import core/, llm/, trace/, runtime/kernels, runtime/runs' parts and the in-cell apps.
Used by runtime/runs.
"""
