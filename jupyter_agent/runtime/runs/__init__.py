"""Runs: the run manager (:mod:`.manager`: start, route, break), opening a run, its records,
parts, recovery after a crash, the mailbox, log syncing, approvals and waiting on a chat.
May import core/, trace/, runtime/loop and the store.
Used by the assembly, the service and the server.
"""
