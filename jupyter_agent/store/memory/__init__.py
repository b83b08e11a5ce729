"""The store's memory and recall index: memory rows and queries, the FTS/postings index of
turns, chunks and memories, the queue of stored turns waiting for their doc and the
indexer thread that writes them, recall queries and the vector search. May import
sqlalchemy (Core) and core/memory. Used by store/repo.py, store/chat_store.py and runtime/memory.
"""
