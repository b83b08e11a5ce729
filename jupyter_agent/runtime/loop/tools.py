"""A run's cells and commands: ``cell.run`` and ``bash.run`` performed in the run's kernel,
with their live events (``cell_start``, ``cell_output``, ``cell_end``) and the digest the
loop gives the model.

While a cell or command runs, its outputs go out as ``cell_output`` events (throttled and
bounded by :class:`~jupyter_agent.runtime.kernels.live_output.LiveCell`); ``cell_end``
carries the final outputs and a ``status`` (``ok``, ``error``, ``timed_out``,
``cancelled``). Live output never changes a recorded result. A cell or command a hard
break cuts gets what it printed until then (:meth:`CellRunner.cut`: a partial result and
its ``cell_end``). The in-cell bubbles a cell posts ride on its result (``bubbles``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from jupyter_agent.core.digest.cell_status import bash_status, cell_status
from jupyter_agent.core.digest.cells import BashResult, CellError, CellResult
from jupyter_agent.core.digest.record import DIGEST_KEY, digest_record
from jupyter_agent.core.digest.render import DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.events.types import CellKind, CellOutput, CellStart, Event
from jupyter_agent.exceptions import KernelDied
from jupyter_agent.runtime.kernels.live_output import LiveCell
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from jupyter_agent.runtime.loop.apphost import AppDriver, CellHost
from jupyter_agent.runtime.loop.cell_events import (
    RunningCell,
    bash_end,
    cell_end,
    digest_or_none,
    with_model_calls,
)

__all__ = ["CellRunner"]


class CellRunner:
    """Runs a run's cells and commands in its kernel (see the module docstring)."""

    def __init__(
        self,
        *,
        kernel: RunKernel,
        publish: Callable[[Event], None],
        digest_options: DigestOptions,
        app_driver: Callable[[], AppDriver],
    ) -> None:
        """``app_driver``: the run as the in-cell apps' host sees it (a cell's app calls)."""
        self.kernel = kernel
        self._publish = publish
        self.digest_options = digest_options
        self._app_driver = app_driver
        self._tool_runs = 0  # cells and commands so far: a command's id is c<n>, as the loop's
        self._running: RunningCell | None = None
        self.bubbles: list[str] = []  # in-cell bubbles of the cell in flight

    def _live(self, seq: int, cell_id: str, kind: CellKind, code: str) -> RunningCell:
        """Start a cell or command: ``cell_start``, then its live ``cell_output`` events."""
        self._tool_runs += 1
        self._publish(CellStart(cell_id=cell_id, kind=kind, code=code))
        live = LiveCell(lambda out: self._publish(CellOutput(cell_id=cell_id, output=out)))
        self._running = RunningCell(seq=seq, cell_id=cell_id, kind=kind, code=code, live=live)
        return self._running

    def _end_failed(self, running: RunningCell) -> None:
        """A cell that could not run to its end (the effect fails): still end it visibly."""
        self._running = None
        self._publish(running.partial("error")[2])

    def cut(self, seq: int) -> tuple[str, dict[str, Any]] | None:
        """The cell or command at ``seq`` was cut by a hard break: its ``cell_end``
        (status ``cancelled``) goes out; returns its result key (``cell`` / ``bash``) and
        the partial result (None: no cell was running at ``seq``)."""
        running, self._running = self._running, None
        if running is None or running.seq != seq:
            return None
        key, partial, end = running.partial()
        self._publish(end)
        return key, partial

    def take_bubbles(self) -> list[str]:
        """The bubbles the cell in flight posted so far; emptied."""
        bubbles, self.bubbles = list(self.bubbles), []
        return bubbles

    async def cell_run(self, data: dict[str, Any], seq: int) -> dict[str, Any]:
        """``cell.run``: the cell's result JSON, its digest under ``DIGEST_KEY``."""
        cell_id, code = str(data["cell_id"]), str(data["code"])
        self.bubbles = []
        running = self._live(seq, cell_id, "python", code)
        host = CellHost(self._app_driver(), seq, cell_id)
        try:
            handle = running.handle = await self.kernel.handle()
            cell: CellResult = await handle.run_cell(
                cell_id,
                code,
                timeout_s=float(data["timeout_s"]),
                host=host,
                parent=seq,
                on_output=running.live.add,
            )
        except KernelDied as err:
            await self.kernel.replace_dead()
            # What it printed before it died stays (the live output collected so far).
            _, printed, _ = running.partial("error")
            cell = replace(
                CellResult.from_json(printed),
                error=CellError(
                    ename="KernelDied",
                    evalue=f"{err}. A new kernel was started: earlier variables are gone.",
                ),
            )
        except Exception:
            self._end_failed(running)
            raise
        finally:
            running.live.close()
        self._running = None
        if host.model_calls:
            cell = with_model_calls(cell, host.model_calls)
        result = cell.to_json()
        digest = digest_or_none(lambda: digest_cell(cell, self.digest_options))
        if digest is not None:
            result[DIGEST_KEY] = digest_record(digest)  # what the loop gives the model
        text = digest.text if digest is not None else None
        self._publish(cell_end(cell, cell_status(cell), text))
        if self.bubbles:
            result["bubbles"] = self.take_bubbles()
        return result

    async def bash_run(self, data: dict[str, Any], seq: int) -> dict[str, Any]:
        """``bash.run``: the command's result JSON, its digest under ``DIGEST_KEY``."""
        command = str(data["command"])
        cell_id = f"c{self._tool_runs + 1}"  # the loop's count of cells and commands
        running = self._live(seq, cell_id, "bash", command)
        try:
            handle = running.handle = await self.kernel.handle()
            result: BashResult = await handle.run_bash(
                command, timeout_s=float(data["timeout_s"]), on_output=running.live.add
            )
        except Exception:
            self._end_failed(running)
            raise
        finally:
            running.live.close()
        self._running = None
        digest = digest_or_none(lambda: digest_bash(result, self.digest_options))
        status = bash_status(result)
        if status == "ok" and digest is not None and digest.is_error:
            status = "error"
        self._publish(bash_end(cell_id, result, status, digest.text if digest else None))
        data_out = result.to_json()
        if digest is not None:
            data_out[DIGEST_KEY] = digest_record(digest)
        return data_out
