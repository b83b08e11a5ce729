"""The store's turns and chunk summaries: the queries and the mixin of
:class:`~jupyter_agent.store.repo.Store` that reads turns by position and writes chunks.
May import sqlalchemy (Core) and core/history. Used by store/repo.py.
"""
