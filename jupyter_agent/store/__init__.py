"""The agent database (sqlmodel): chats, turns, run summaries.

SQLite by default, PostgreSQL by URL, with the same code.
"""
