"""Which program a run runs and keeping it honest: resolving versions (:mod:`.resolve`), the
guard around a program's generator, and the failed-turn builder (:mod:`.end`). May import
programs/ and core/. Used by runtime/runs, runtime/loop and runtime/history.
"""
