"""The agent kernel's own ``input_request`` round trip (:func:`jupyter_agent.kernel.kernel.
_input_request`) over a real zmq socket pair and real jupyter_client sessions: the reply is
read, and a message that is not a valid reply (a bad signature) is skipped as ipykernel
skips it, not raised into the cell's app call."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest
import zmq
from jupyter_client.session import DELIM, Session

from jupyter_agent.kernel.kernel import _input_request

pytestmark = pytest.mark.timeout(30)


def _pair() -> tuple[zmq.Context[Any], zmq.Socket[Any], zmq.Socket[Any]]:
    ctx: zmq.Context[Any] = zmq.Context()
    kernel_side, client_side = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    port = kernel_side.bind_to_random_port("tcp://127.0.0.1")
    client_side.connect(f"tcp://127.0.0.1:{port}")
    return ctx, kernel_side, client_side


@pytest.mark.parametrize("garbage", [False, True])
def test_the_reply_is_read_and_an_invalid_message_is_skipped(garbage: bool) -> None:
    ctx, kernel_side, client_side = _pair()
    session = Session(key=b"secret-key")
    kernel = SimpleNamespace(
        stdin_socket=kernel_side, session=session, log=logging.getLogger("test")
    )

    def client() -> None:
        _, request = session.recv(client_side, mode=0)
        assert request is not None
        assert request["content"] == {"prompt": "ask", "password": False}
        if garbage:  # signed with another key: ipykernel logs it and waits on
            client_side.send_multipart([DELIM, b"bad", b"{}", b"{}", b"{}", b"{}"])
        session.send(client_side, "input_reply", {"value": "answer"}, parent=request)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        assert _input_request(kernel, "ask", None, {}) == "answer"
    finally:
        thread.join(10)
        kernel_side.close(0)
        client_side.close(0)
        ctx.term()
