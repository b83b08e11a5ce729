"""A chat's history as the model sees it: chunk summaries (:mod:`.chunks`), the history
program that writes them (:mod:`.program`), the boot window of raw turns and summaries
(:mod:`.window`, :mod:`.pick`) and the history a run reads (:mod:`.answer`). Pure: core/ base
modules, llm's chat call. Used by the loop, runtime/history and store/history.
"""
