"""Runs: the run manager (:mod:`.manager`: route, break, recover; :mod:`.slots`: one slot per
chat; :mod:`.starts`: start and hand over), opening a run, its records, parts, mailbox items,
ceilings, recovery, the mailbox, log syncing, approvals and the chat and run services.
May import core/, trace/, runtime/loop and the store. Used by the assembly and the server.
"""
