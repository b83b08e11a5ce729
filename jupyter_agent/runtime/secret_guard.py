"""Known secrets kept out at the edges: what a person sends, what a model call sends and
answers (:mod:`jupyter_agent.runtime.secrets` is the scrubber both use).

- :class:`ScrubbingTransport` is the model-call transport as runs, summary runs and the
  embedder see it (the assembly wraps the server's one, as ``ScrubbingPool`` wraps the
  pool). Before a request leaves the process it looks for every needle of every known
  secret in the request (its URL and JSON body): a request holding one is **refused**
  (:class:`~jupyter_agent.exceptions.SecretInRequest`, naming the secret and the form
  found, never a value): nothing is sent. Refused, not edited: the request was already
  recorded as the ``http.post`` intent, and sending something else than the log says was
  sent would make the log lie; a secret inside a base64 file part cannot be cut out
  without breaking the file; and every input a run's requests are built from is already
  scrubbed where it enters (results, messages, files), so a refusal means a source that
  was missed and must be found, not hidden. The reply (text, thinking, tool-call
  arguments: the whole JSON body) and a failure's message and body come back scrubbed,
  so what the driver records and the loop reads holds no secret, and a replay of the log
  reads the same. Streamed text deltas pass through a
  :class:`~jupyter_agent.runtime.secrets.LiveScrubber` (a secret split over two deltas is
  caught; the tail that could begin one is held back until the next delta or the end).
- :func:`clean_message` scrubs what a person sends with a message before it is stored or
  queued: its text, its view, and each attachment (its bytes read as Latin-1, so the
  literal and encoded forms of an ASCII secret are found in any file; a file that held
  one is stored with the marker in its place).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from jupyter_agent.exceptions import ProviderError, SecretInRequest
from jupyter_agent.llm.spec import HttpReply, RequestSpec, encode_body
from jupyter_agent.runtime.secrets import Scrubber

__all__ = ["ScrubbingTransport", "clean_file", "clean_message"]


class ScrubbingTransport:
    """The transport as runs see it (see the module docstring); all else is the wrapped
    transport's."""

    def __init__(self, transport: Any, scrubber: Scrubber) -> None:
        self.transport = transport
        self.scrubber = scrubber

    async def post(
        self,
        spec: RequestSpec,
        *,
        on_delta: Callable[[str], None] | None = None,
        on_retry: Callable[[Any], None] | None = None,
    ) -> HttpReply:
        """The wrapped ``post``, refused when ``spec`` holds a known secret, its reply
        (and any ProviderError) scrubbed.

        The body is encoded once, here, and handed to the wrapped transport as sent; the
        secret check searches that text (:meth:`~.secrets.Scrubber.may_hold`) and walks the
        request's strings only when it may hold one."""
        scrubber = self.scrubber
        content = encode_body(spec.json)
        if scrubber and (scrubber.may_hold(content.decode("ascii")) or scrubber.may_hold(spec.url)):
            found = scrubber.found([spec.url, spec.json])
            if found:
                raise SecretInRequest(
                    f"the request was not sent: it holds a known secret ({', '.join(found)}); "
                    "find where it entered the conversation and remove it"
                )
        if not scrubber:
            plain: HttpReply = await self.transport.post(
                spec, on_delta=on_delta, on_retry=on_retry, content=content
            )
            return plain
        live = scrubber.live()
        forward = on_delta

        def delta(text: str) -> None:
            out = live.text("delta", text)
            if out and forward is not None:
                forward(out)

        try:
            reply: HttpReply = await self.transport.post(
                spec,
                on_delta=delta if on_delta is not None else None,
                on_retry=on_retry,
                content=content,
            )
        except ProviderError as err:
            err.args = tuple(scrubber.clean(a) if isinstance(a, str) else a for a in err.args)
            err.body = scrubber.clean_json(err.body)
            err.attempts = scrubber.clean_json(err.attempts)
            raise
        finally:
            for out in live.close():  # what was held back of the last delta
                if forward is not None and out.get("text"):
                    forward(str(out["text"]))
        body, attempts = scrubber.clean_json((reply.json, reply.attempts))
        if body is reply.json and attempts is reply.attempts:
            return reply
        return replace(reply, json=body, attempts=attempts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def clean_file(scrubber: Scrubber, file: dict[str, Any]) -> dict[str, Any]:
    """An attachment (``{name, media_type, data}``, data in base64) with every known
    secret in its bytes or name replaced; ``file`` itself when it holds none."""
    if not scrubber:
        return file
    raw = base64.b64decode(str(file.get("data") or ""))
    text = raw.decode("latin-1")  # every byte one character: ASCII secrets are found as such
    clean = scrubber.scrub(text)
    name = scrubber.clean(str(file.get("name") or ""))
    if clean is text and name == file.get("name"):
        return file
    data = base64.b64encode(clean.encode("latin-1")).decode("ascii")
    return {**file, "name": name, "data": data}


def clean_message(
    scrubber: Scrubber,
    text: str,
    view: dict[str, Any] | None,
    files: Sequence[dict[str, Any]],
) -> tuple[str, dict[str, Any] | None, list[dict[str, Any]]]:
    """A person's message (text, view, attachments) with every known secret replaced."""
    return (
        scrubber.clean(text),
        scrubber.clean_json(view),
        [clean_file(scrubber, f) for f in files],
    )
