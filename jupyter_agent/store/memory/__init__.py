"""The store's memory and recall index: memory rows and queries, the FTS/postings index of
turns, chunks and memories, recall queries and the vector search. May import sqlmodel and
core/memory. Used by store/repo.py and runtime/memory.
"""
