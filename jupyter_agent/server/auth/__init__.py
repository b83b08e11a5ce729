"""Who may do what: the authorizer's answers awaited (:mod:`.authz`), each request's owner
and who is an admin (:mod:`.owners`), and the isolation several owners need (:mod:`.isolation`:
sandboxed agent kernels), and who started which of the person's kernels
(:mod:`.kernel_owners`: the person's kernels lent to the agent's ``notebook`` app). May
import jupyter_server, runtime/kernels, runtime/notebook's person kernels and the store's
URL helper. Used by server/base.py, the handlers, server/mcp and server/app.py.
"""
