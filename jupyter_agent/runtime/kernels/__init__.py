"""Agent kernels: the warm pool (:mod:`.pool`, its growth and keepalive), one kernel's
handle (its cell results, the in-cell app calls it answers), starts, the sandbox, the
environment filter, the reaper, remote kernels and live output. May import jupyter_client,
never jupyter_server (the server hands in its kernel manager). Used by the driver, the
assembly and the server.
"""
