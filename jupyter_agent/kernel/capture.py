"""Capturing one named cell: printed values, stderr, displays, outputs, app calls.

A :class:`CellCapture` is active while the kernel executes a cell the agent named
(``c1``, ``c2``, ...). The kernel feeds it from four places:

- ``print`` (builtins.print is replaced while a capture is active): each call is ONE value,
  whatever number of chunks it writes; the value is the printed text minus one trailing
  newline.
- ``sys.stdout`` (wrapped by :class:`CapturingStream`): other writes are grouped into one
  value per flush (a "burst"); a print closes the pending burst first, so order is kept.
- ``sys.stderr``: kept apart, as one bounded value.
- the display publisher and the displayhook: rich displays and the last value.

Everything that goes to the host is bounded: each value's text is cut to
:data:`VALUE_CAP` characters (``chars`` keeps the full length; the full text stays in the
kernel for ``values.get``); of more than ``PRINTS_HEAD + PRINTS_TAIL`` printed values only
the first :data:`PRINTS_HEAD` and the last :data:`PRINTS_TAIL` are sent, the others named
by ``prints_omitted``; the nbformat outputs are cut to :data:`OUTPUTS_MAX` entries and
:data:`OUTPUTS_TEXT_CAP` characters of text, after which ``outputs_truncated`` is set.
Bounding the count matters as much as bounding each value: a loop printing a million
numbers would otherwise make a reply of tens of MB, whose building and sending after an
interrupt took longer than the host's interrupt grace (so the kernel was restarted and
the output lost).
"""

from __future__ import annotations

import builtins
import io
import sys
import threading
from typing import Any, TextIO

from jupyter_agent.core.digest.cells import (
    AppCallRecord,
    CellError,
    CellResult,
    LastValue,
    OmittedPrints,
    Value,
)

__all__ = [
    "OUTPUTS_MAX",
    "OUTPUTS_TEXT_CAP",
    "PRINTS_HEAD",
    "PRINTS_TAIL",
    "VALUE_CAP",
    "CapturingStream",
    "CellCapture",
    "active",
    "bound_value",
    "install_print_hook",
]

VALUE_CAP = 20_000
OUTPUTS_MAX = 200
OUTPUTS_TEXT_CAP = 100_000
# Printed values sent to the host: the first and the last ones (the rest stay in the kernel).
PRINTS_HEAD = 500
PRINTS_TAIL = 500
# A mime entry bigger than this (an image of many MB) is replaced by a note in the result.
MIME_CAP = 5_000_000

_ORIGINAL_PRINT = builtins.print
_lock = threading.Lock()
_active: CellCapture | None = None


def bound_value(text: str, cap: int = VALUE_CAP) -> Value:
    """A :class:`Value` of ``text`` cut to ``cap`` characters, ``chars`` the full length."""
    return Value(text=text[:cap], chars=len(text))


def active() -> CellCapture | None:
    """The capture of the cell now executing, or None (an unnamed cell, or idle)."""
    return _active


def _bound_mime(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mime, value in data.items():
        if isinstance(value, str) and mime.startswith("text/") and len(value) > VALUE_CAP:
            out[mime] = value[:VALUE_CAP]
        elif isinstance(value, str) and len(value) > MIME_CAP:
            out[mime] = f"<{mime}: {len(value)} chars, not sent>"
        else:
            out[mime] = value
    return out


class CellCapture:
    """What one named cell produced, gathered while it runs; :meth:`result` bounds it."""

    def __init__(self, cell_id: str) -> None:
        self.cell_id = cell_id
        self.prints: list[str] = []  # full texts, as kept for values.get
        self.stderr_parts: list[str] = []
        self.displays: list[dict[str, Any]] = []
        self.app_calls: list[AppCallRecord] = []
        self.batches = 0  # batch(...) calls so far, numbering AppCallRecord.batch
        self.last_obj: Any = None
        self.has_last = False
        self.last_bundle: dict[str, Any] | None = None
        self.execution_count: int | None = None
        self._burst: list[str] = []
        self._outputs: list[dict[str, Any]] = []
        self._outputs_chars = 0
        self._outputs_truncated = False

    # -- feeding ---------------------------------------------------------------------------
    def on_print(self, text: str) -> None:
        """One print() call: closes the pending stdout burst, then records one value."""
        self.close_burst()
        self.prints.append(text[:-1] if text.endswith("\n") else text)
        self._add_stream("stdout", text)

    def on_stdout_write(self, text: str) -> None:
        """A direct ``sys.stdout.write``: part of the current burst."""
        if text:
            self._burst.append(text)
            self._add_stream("stdout", text)

    def close_burst(self) -> None:
        """End the current stdout burst (a flush): it becomes one value."""
        if self._burst:
            text = "".join(self._burst)
            self._burst.clear()
            self.prints.append(text[:-1] if text.endswith("\n") else text)

    def on_stderr_write(self, text: str) -> None:
        if text:
            self.stderr_parts.append(text)
            self._add_stream("stderr", text)

    def on_display(self, data: dict[str, Any], metadata: dict[str, Any] | None) -> None:
        bundle = _bound_mime(data)
        self.displays.append(bundle)
        self._add_output(
            {"output_type": "display_data", "data": bundle, "metadata": metadata or {}},
            sum(len(v) for v in bundle.values() if isinstance(v, str)),
        )

    def on_execute_result(
        self, data: dict[str, Any], metadata: dict[str, Any] | None, count: int | None
    ) -> None:
        self.last_bundle = _bound_mime(data)
        self._add_output(
            {
                "output_type": "execute_result",
                "data": self.last_bundle,
                "metadata": metadata or {},
                "execution_count": count,
            },
            len(str(self.last_bundle.get("text/plain", ""))),
        )

    def on_last_object(self, obj: Any) -> None:
        self.last_obj = obj
        self.has_last = True

    # -- outputs (nbformat shapes, bounded) ------------------------------------------------
    def _add_stream(self, name: str, text: str) -> None:
        if self._outputs and self._outputs[-1].get("name") == name:
            room = OUTPUTS_TEXT_CAP - self._outputs_chars
            if room <= 0:
                self._outputs_truncated = True
                return
            piece = text[:room]
            self._outputs[-1]["text"] += piece
            self._outputs_chars += len(piece)
            self._outputs_truncated |= len(piece) < len(text)
            return
        self._add_output({"output_type": "stream", "name": name, "text": ""}, 0)
        if self._outputs and self._outputs[-1].get("name") == name:
            self._add_stream(name, text)

    def _add_output(self, output: dict[str, Any], chars: int) -> None:
        if len(self._outputs) >= OUTPUTS_MAX or self._outputs_chars + chars > OUTPUTS_TEXT_CAP:
            self._outputs_truncated = True
            return
        self._outputs.append(output)
        self._outputs_chars += chars

    # -- result ----------------------------------------------------------------------------
    def result(self, *, error: CellError | None, duration_s: float) -> CellResult:
        """The bounded :class:`CellResult` (call once the cell finished)."""
        self.close_burst()
        outputs = [o for o in self._outputs if o.get("output_type") != "stream" or o["text"]]
        if error is not None:
            outputs.append(
                {
                    "output_type": "error",
                    "ename": error.ename,
                    "evalue": error.evalue[:VALUE_CAP],
                    "traceback": list(error.traceback),
                }
            )
        last = None
        if self.has_last:
            bundle = dict(self.last_bundle or {})
            text = bundle.pop("text/plain", None)
            if text is None:
                try:
                    text = repr(self.last_obj)
                except Exception as exc:  # a broken __repr__ must not lose the result
                    text = f"<repr failed: {type(exc).__name__}: {exc}>"
            last = LastValue(
                repr=bound_value(str(text)), mime=bundle, type_name=type(self.last_obj).__name__
            )
        stderr = "".join(self.stderr_parts)
        prints, omitted = _bound_prints(self.prints)
        return CellResult(
            cell_id=self.cell_id,
            prints=prints,
            prints_omitted=omitted,
            stderr=bound_value(stderr) if stderr else None,
            last=last,
            displays=tuple(self.displays),
            error=error,
            outputs=tuple(outputs),
            outputs_truncated=self._outputs_truncated,
            execution_count=self.execution_count,
            app_calls=tuple(self.app_calls),
            duration_s=round(duration_s, 6),
        )

    # -- activation ------------------------------------------------------------------------
    def __enter__(self) -> CellCapture:
        global _active
        with _lock:
            _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        with _lock:
            _active = None


def _bound_prints(prints: list[str]) -> tuple[tuple[Value, ...], OmittedPrints | None]:
    """The values sent for ``prints``: all, or the first and last ones and what is left out."""
    if len(prints) <= PRINTS_HEAD + PRINTS_TAIL:
        return tuple(bound_value(p) for p in prints), None
    kept = [*prints[:PRINTS_HEAD], *prints[-PRINTS_TAIL:]]
    middle = prints[PRINTS_HEAD:-PRINTS_TAIL]
    omitted = OmittedPrints(
        first=PRINTS_HEAD + 1, count=len(middle), chars=sum(len(p) for p in middle)
    )
    return tuple(bound_value(p) for p in kept), omitted


class CapturingStream:
    """Wraps the kernel's ``sys.stdout``/``sys.stderr`` while a cell is captured.

    Everything is forwarded to the real stream (so ordinary iopub output still flows);
    the capture sees each write, and a flush closes a stdout burst.
    """

    def __init__(self, real: TextIO, capture: CellCapture, name: str) -> None:
        self._real = real
        self._capture = capture
        self._name = name

    @property
    def real(self) -> TextIO:
        """The wrapped stream."""
        return self._real

    def write(self, text: str) -> int:
        if self._name == "stdout":
            self._capture.on_stdout_write(text)
        else:
            self._capture.on_stderr_write(text)
        return self._real.write(text)

    def write_print(self, text: str) -> None:
        """One whole print() call's text: one value, one write to the real stream."""
        self._capture.on_print(text)
        self._real.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._name == "stdout":
            self._capture.close_burst()
        self._real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _agent_print(
    *args: object,
    sep: str | None = " ",
    end: str | None = "\n",
    file: Any = None,
    flush: bool = False,
) -> None:
    """``print`` while the agent kernel runs: each call to the captured stdout is one value."""
    target = sys.stdout if file is None else file
    if not isinstance(target, CapturingStream) or target._name != "stdout":
        _ORIGINAL_PRINT(*args, sep=sep, end=end, file=file, flush=flush)
        return
    buf = io.StringIO()
    _ORIGINAL_PRINT(*args, sep=sep, end=end, file=buf)
    target.write_print(buf.getvalue())
    if flush:
        target.real.flush()


def install_print_hook() -> None:
    """Replace ``builtins.print`` (idempotent); it behaves as before outside captured cells."""
    builtins.print = _agent_print
