"""One cell in a fresh agent kernel, digested as the agent's model reads it.

The MCP endpoint's ``run_cell`` tool calls :meth:`CellService.run`: a kernel is taken from
the pool (the scrubbing pool runs use, so what the kernel sends is cleaned of known
secrets), moved to the server's root, runs the one cell and is shut down after, whatever
happened. The answer is what a run's driver makes of a cell (``runtime/loop/tools.py``):
the :class:`~jupyter_agent.core.digest.cells.CellResult`, digested by
:func:`~jupyter_agent.core.digest.render.digest_cell` with the options a new run of the default
agent digests with (:func:`~jupyter_agent.core.digest.record.digest_options_from_config`
on its :class:`~jupyter_agent.runtime.runs.parts.RunConfig`), so the text is the one the
model would read of the same cell as its run's first (``c1``).

The kernel has no app host: the in-cell apps (``chat``, ``llm``, ``memory``, ...) answer
that they are not available here. Nothing here blocks the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_agent.core.digest.cell_status import CellStatus, cell_status
from jupyter_agent.core.digest.cells import CellError, CellResult
from jupyter_agent.core.digest.record import digest_options_from_config
from jupyter_agent.core.digest.render import digest_cell
from jupyter_agent.exceptions import BadRequest, KernelDied
from jupyter_agent.runtime.runs.parts import RunConfig

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_IMAGES",
    "MAX_TIMEOUT_S",
    "CellAnswer",
    "CellService",
    "output_images",
]

log = logging.getLogger(__name__)

#: The longest cell ``run_cell`` takes, in characters.
MAX_CODE_CHARS = 200_000
#: The longest timeout a caller may ask for, in seconds.
MAX_TIMEOUT_S = 3600.0
#: The id the cell runs as: a run's first cell's, so the digest reads the same.
CELL_ID = "c1"
#: The most images one answer carries.
MAX_IMAGES = 4
_IMAGE_TYPES = ("image/png", "image/jpeg")


def output_images(outputs: tuple[dict[str, Any], ...]) -> tuple[tuple[str, str], ...]:
    """The PNG/JPEG images of nbformat ``outputs`` as ``(mime type, base64)``, in order."""
    found: list[tuple[str, str]] = []
    for output in outputs:
        data = output.get("data")
        if not isinstance(data, dict):
            continue
        for mime in _IMAGE_TYPES:
            value = data.get(mime)
            if isinstance(value, list):  # nbformat allows a multi-line string
                value = "".join(str(v) for v in value)
            if isinstance(value, str) and value:
                found.append((mime, value.replace("\n", "")))
                break
    return tuple(found[:MAX_IMAGES])


@dataclass(frozen=True)
class CellAnswer:
    """What one cell gave: the digest ``text`` the model would read, whether the digest
    is an error, the cell's ``status`` (``ok``, ``error``, ``timed_out``), its nbformat
    ``outputs``, and its images ``(mime type, base64 data)`` (PNG/JPEG of its outputs, the
    first :data:`MAX_IMAGES`, whatever the model's vision)."""

    text: str
    is_error: bool
    status: CellStatus
    outputs: tuple[dict[str, Any], ...]
    images: tuple[tuple[str, str], ...]
    execution_count: int | None

    def to_json(self) -> dict[str, Any]:
        """``{status, digest, is_error, execution_count, outputs}``."""
        return {
            "status": self.status,
            "digest": self.text,
            "is_error": self.is_error,
            "execution_count": self.execution_count,
            "outputs": list(self.outputs),
        }


class CellService:
    """Runs single cells in fresh kernels of ``pool`` (a ``ScrubbingPool``) in ``root_dir``;
    ``run_config()`` gives the config the digest options are read from."""

    def __init__(self, pool: Any, *, root_dir: str, run_config: Callable[[], RunConfig]) -> None:
        self._pool = pool
        self._root_dir = root_dir
        self._run_config = run_config

    @staticmethod
    def check(code: str, timeout_s: float) -> None:
        """``BadRequest`` for an empty or too long cell, or a timeout outside (0, 3600]."""
        if not code.strip():
            raise BadRequest("'code' is empty", reason="bad_code")
        if len(code) > MAX_CODE_CHARS:
            raise BadRequest(
                f"'code' is longer than {MAX_CODE_CHARS:,} characters", reason="bad_code"
            )
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise BadRequest(
                f"'timeout_s' must be in (0, {MAX_TIMEOUT_S:g}], not {timeout_s:g}",
                reason="bad_timeout",
            )

    async def run(self, code: str, *, timeout_s: float = 60.0) -> CellAnswer:
        """Run ``code`` in a fresh kernel; its digest. Raises ``BadRequest`` (see
        :meth:`check`) before any kernel is taken, ``KernelError`` when none can start."""
        self.check(code, timeout_s)
        options = digest_options_from_config(self._run_config().get)
        handle = await self._pool.acquire(cwd=self._root_dir or None)
        try:
            try:
                cell = await handle.run_cell(CELL_ID, code, timeout_s=timeout_s)
            except KernelDied as err:
                cell = CellResult(
                    cell_id=CELL_ID, error=CellError(ename="KernelDied", evalue=str(err))
                )
        finally:
            # Never reused: the next call gets a clean namespace.
            self._pool.discard_soon(handle)
        digest = digest_cell(cell, options)
        return CellAnswer(
            text=digest.text,
            is_error=digest.is_error,
            status=cell_status(cell),
            outputs=tuple(cell.outputs),
            images=output_images(cell.outputs),
            execution_count=cell.execution_count,
        )
