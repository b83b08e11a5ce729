"""The runtime: the driver that performs effects, the kernel pool, the mailbox (I/O allowed).

It receives the server's kernel manager as an object and never imports jupyter_server.
"""
