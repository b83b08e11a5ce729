"""The fake provider's slow steps: wait, and notice a client that went away meanwhile."""

from __future__ import annotations

import select
import socket
import threading
import time

__all__ = ["wait_or_gone"]


def wait_or_gone(
    connection: socket.socket, stopping: threading.Event, seconds: float
) -> tuple[bool, bool]:
    """Wait up to ``seconds``: ``(stopped, gone)``, whether the fake is stopping, whether
    the client closed its connection (it cancelled the call) before the time was up."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if stopping.wait(min(left, 0.05)):
            return True, False
        readable, _, _ = select.select([connection], [], [], 0)
        if readable:
            try:
                closed = connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                closed = True
            if closed:
                return False, True
    return False, False
