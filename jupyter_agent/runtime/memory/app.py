"""The in-cell ``memory`` app as the app host's table holds it: calls go to the run's
:class:`~jupyter_agent.runtime.memory.service.MemoryService` (``services.memory``) with
author ``agent`` and the run's chat, run and owner (:func:`.service.perform_memory_call`);
a save whose text holds a secret is refused before its intent is logged
(:func:`.service.refused_call`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from jupyter_agent.runtime.memory.service import perform_memory_call, refused_call

if TYPE_CHECKING:
    from jupyter_agent.runtime.loop.apphost import AppCall, AppDriver

__all__ = ["MEMORY_IN_CELL"]


class _MemoryInCell:
    """The ``memory`` app (its methods: the static app table's)."""

    dynamic = False

    def mutating(self, driver: AppDriver, method: str) -> bool:
        return False  # the static app table says

    def refuse(
        self, driver: AppDriver, method: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], str] | None:
        return refused_call(driver.services.memory, method, args)

    async def perform(self, driver: AppDriver, call: AppCall) -> Any:
        return await perform_memory_call(
            driver.services.memory,
            call.method,
            call.args,
            chat_id=driver.chat_id,
            run_id=driver.run_id,
            owner=driver.owner,
        )


#: The in-cell ``memory`` app (:mod:`jupyter_agent.runtime.loop.app_table` registers it).
MEMORY_IN_CELL: Final = _MemoryInCell()
