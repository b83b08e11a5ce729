"""Memory and recall with I/O: the memory service (REST and in-cell), embeddings, the vector
index and hybrid recall search. May import core/memory, llm/ embeddings, store/memory.
Used by the assembly, the driver and the server's memory routes.
"""
