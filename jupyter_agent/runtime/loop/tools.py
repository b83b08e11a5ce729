"""The driver's cells and commands: ``cell.run`` and ``bash.run`` performed in the run's
kernel, with their live events (``cell_start``, ``cell_output``, ``cell_end``) and the
digest the loop gives the model (a part of :class:`~jupyter_agent.runtime.loop.driver.RunDriver`,
kept here so each module stays small).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jupyter_agent.core.digest.cell_status import bash_status, cell_status
from jupyter_agent.core.digest.cells import BashResult, CellError, CellResult
from jupyter_agent.core.digest.record import DIGEST_KEY, digest_record
from jupyter_agent.core.digest.render import DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.events.types import CellKind, CellOutput, CellStart, Event
from jupyter_agent.exceptions import KernelDied
from jupyter_agent.runtime.kernels.live_output import LiveCell
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from jupyter_agent.runtime.loop.apphost import CellHost
from jupyter_agent.runtime.loop.cell_events import (
    RunningCell,
    bash_end,
    cell_end,
    digest_or_none,
    with_model_calls,
)

if TYPE_CHECKING:
    from jupyter_agent.runtime.loop.apphost import AppDriver

__all__ = ["ToolRuns"]


class ToolRuns:
    """The cell and command performers of a run's driver (a mixin of RunDriver)."""

    kernel: RunKernel
    _tool_runs: int
    _running: RunningCell | None
    _bubbles: list[str]
    _digest_options: DigestOptions

    def _publish(self, event: Event) -> None:
        raise NotImplementedError

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

    async def _cell_run(self, data: dict[str, Any], seq: int) -> dict[str, Any]:
        cell_id, code = str(data["cell_id"]), str(data["code"])
        self._bubbles = []
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
        digest = digest_or_none(lambda: digest_cell(cell, self._digest_options))
        if digest is not None:
            result[DIGEST_KEY] = digest_record(digest)  # what the loop gives the model
        text = digest.text if digest is not None else None
        self._publish(cell_end(cell, cell_status(cell), text))
        if self._bubbles:
            result["bubbles"], self._bubbles = list(self._bubbles), []
        return result

    async def _bash_run(self, data: dict[str, Any], seq: int) -> dict[str, Any]:
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
        digest = digest_or_none(lambda: digest_bash(result, self._digest_options))
        status = bash_status(result)
        if status == "ok" and digest is not None and digest.is_error:
            status = "error"
        self._publish(bash_end(cell_id, result, status, digest.text if digest else None))
        data_out = result.to_json()
        if digest is not None:
            data_out[DIGEST_KEY] = digest_record(digest)
        return data_out

    def _app_driver(self) -> AppDriver:
        """This driver as the app host's driver (the RunDriver is one)."""
        return self  # type: ignore[return-value]
