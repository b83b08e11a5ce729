"""Old module names a deployed program may import, answered by the modules that hold them now.

The package was regrouped by concern (``core/loop.py`` became ``core/loop/machine.py``,
``core/loop_steps.py`` ``core/loop/steps.py``, ...). A program deployed before that, stored in
the database with its imports, still loads and still replays its old logs: while
:func:`~jupyter_agent.programs.loader.import_program` imports it, :class:`MovedModules` answers
each old name with the module that now holds its code (the same module object, so names and
identities are shared). Old names that are now packages (``jupyter_agent.core.loop``) re-export
what the old module offered from their ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Final

__all__ = ["MOVED", "MovedModules", "install"]

#: Old dotted module name -> the module that holds its code now.
MOVED: Final[dict[str, str]] = {
    "jupyter_agent.cli_memory": "jupyter_agent.cli.memory",
    "jupyter_agent.cli_program": "jupyter_agent.cli.program",
    "jupyter_agent.cli_render": "jupyter_agent.cli.render",
    "jupyter_agent.cli_replay": "jupyter_agent.cli.replay",
    "jupyter_agent.cli_trace": "jupyter_agent.cli.trace",
    "jupyter_agent.core.approval": "jupyter_agent.core.loop.approval",
    "jupyter_agent.core.apps": "jupyter_agent.core.loop.apps",
    "jupyter_agent.core.cell_status": "jupyter_agent.core.digest.cell_status",
    "jupyter_agent.core.cells": "jupyter_agent.core.digest.cells",
    "jupyter_agent.core.chunks": "jupyter_agent.core.history.chunks",
    "jupyter_agent.core.credentials": "jupyter_agent.core.memory.credentials",
    "jupyter_agent.core.digest_parts": "jupyter_agent.core.digest.parts",
    "jupyter_agent.core.digest_record": "jupyter_agent.core.digest.record",
    "jupyter_agent.core.drive": "jupyter_agent.core.loop.drive",
    "jupyter_agent.core.history_program": "jupyter_agent.core.history.program",
    "jupyter_agent.core.inbox": "jupyter_agent.core.loop.inbox",
    "jupyter_agent.core.loop_steps": "jupyter_agent.core.loop.steps",
    "jupyter_agent.core.mcp_catalogue": "jupyter_agent.core.mcp.catalogue",
    "jupyter_agent.core.notebook_digest": "jupyter_agent.core.notebook.digest",
    "jupyter_agent.core.programs": "jupyter_agent.core.loop.programs",
    "jupyter_agent.core.prompt": "jupyter_agent.core.loop.prompt",
    "jupyter_agent.core.proposal_edits": "jupyter_agent.core.notebook.edits",
    "jupyter_agent.core.proposals": "jupyter_agent.core.notebook.proposals",
    "jupyter_agent.core.recall": "jupyter_agent.core.memory.recall",
    "jupyter_agent.core.recall_hybrid": "jupyter_agent.core.memory.hybrid",
    "jupyter_agent.core.recall_program": "jupyter_agent.core.memory.program",
    "jupyter_agent.core.recall_terms": "jupyter_agent.core.memory.terms",
    "jupyter_agent.core.runstate": "jupyter_agent.core.loop.runstate",
    "jupyter_agent.core.steps": "jupyter_agent.core.events.steps",
    "jupyter_agent.core.tracebacks": "jupyter_agent.core.digest.tracebacks",
    "jupyter_agent.core.ts_mirror": "jupyter_agent.core.events.ts_mirror",
    "jupyter_agent.core.window": "jupyter_agent.core.history.window",
    "jupyter_agent.core.window_pick": "jupyter_agent.core.history.pick",
    "jupyter_agent.llm.fake_cache": "jupyter_agent.llm.fake.cache",
    "jupyter_agent.llm.fake_embed": "jupyter_agent.llm.fake.embed",
    "jupyter_agent.llm.fake_script": "jupyter_agent.llm.fake.script",
    "jupyter_agent.llm.fake_sse": "jupyter_agent.llm.fake.sse",
    "jupyter_agent.llm.fake_wire": "jupyter_agent.llm.fake.wire",
    "jupyter_agent.runtime.admin_profiles": "jupyter_agent.runtime.settings.profiles",
    "jupyter_agent.runtime.agents": "jupyter_agent.runtime.settings.agents",
    "jupyter_agent.runtime.apphost": "jupyter_agent.runtime.loop.apphost",
    "jupyter_agent.runtime.approvals": "jupyter_agent.runtime.runs.approvals",
    "jupyter_agent.runtime.cell_events": "jupyter_agent.runtime.loop.cell_events",
    "jupyter_agent.runtime.cell_service": "jupyter_agent.runtime.kernels.cell_service",
    "jupyter_agent.runtime.chat_wait": "jupyter_agent.runtime.runs.chat_wait",
    "jupyter_agent.runtime.contents": "jupyter_agent.runtime.notebook.contents",
    "jupyter_agent.runtime.demo": "jupyter_agent.runtime.settings.demo",
    "jupyter_agent.runtime.driver": "jupyter_agent.runtime.loop.driver",
    "jupyter_agent.runtime.driver_tools": "jupyter_agent.runtime.loop.tools",
    "jupyter_agent.runtime.embedder": "jupyter_agent.runtime.memory.embedder",
    "jupyter_agent.runtime.envfilter": "jupyter_agent.runtime.kernels.envfilter",
    "jupyter_agent.runtime.exports": "jupyter_agent.runtime.notebook.exports",
    "jupyter_agent.runtime.history_driver": "jupyter_agent.runtime.history.driver",
    "jupyter_agent.runtime.history_jobs": "jupyter_agent.runtime.history.jobs",
    "jupyter_agent.runtime.hybrid_recall": "jupyter_agent.runtime.memory.hybrid",
    "jupyter_agent.runtime.kernel_handle": "jupyter_agent.runtime.kernels.handle",
    "jupyter_agent.runtime.kernel_starts": "jupyter_agent.runtime.kernels.starts",
    "jupyter_agent.runtime.keypolicy": "jupyter_agent.runtime.settings.keypolicy",
    "jupyter_agent.runtime.live_docs": "jupyter_agent.runtime.notebook.live_docs",
    "jupyter_agent.runtime.live_output": "jupyter_agent.runtime.kernels.live_output",
    "jupyter_agent.runtime.log_sync": "jupyter_agent.runtime.runs.log_sync",
    "jupyter_agent.runtime.mailbox": "jupyter_agent.runtime.runs.mailbox",
    "jupyter_agent.runtime.mcp_app": "jupyter_agent.runtime.mcp.app",
    "jupyter_agent.runtime.mcp_config": "jupyter_agent.runtime.mcp.config",
    "jupyter_agent.runtime.mcp_connection": "jupyter_agent.runtime.mcp.connection",
    "jupyter_agent.runtime.mcp_hub": "jupyter_agent.runtime.mcp.hub",
    "jupyter_agent.runtime.mcp_results": "jupyter_agent.runtime.mcp.results",
    "jupyter_agent.runtime.memory_service": "jupyter_agent.runtime.memory.service",
    "jupyter_agent.runtime.model_calls": "jupyter_agent.runtime.loop.model_calls",
    "jupyter_agent.runtime.notebook_app": "jupyter_agent.runtime.notebook.app",
    "jupyter_agent.runtime.pool_growth": "jupyter_agent.runtime.kernels.growth",
    "jupyter_agent.runtime.program_end": "jupyter_agent.runtime.programs.end",
    "jupyter_agent.runtime.program_guard": "jupyter_agent.runtime.programs.guard",
    "jupyter_agent.runtime.proposals": "jupyter_agent.runtime.notebook.proposals",
    "jupyter_agent.runtime.provisioner": "jupyter_agent.runtime.kernels.provisioner",
    "jupyter_agent.runtime.readiness": "jupyter_agent.runtime.settings.readiness",
    "jupyter_agent.runtime.reaper": "jupyter_agent.runtime.kernels.reaper",
    "jupyter_agent.runtime.recall_search": "jupyter_agent.runtime.memory.search",
    "jupyter_agent.runtime.recovery": "jupyter_agent.runtime.runs.recovery",
    "jupyter_agent.runtime.remote_kernels": "jupyter_agent.runtime.kernels.remote",
    "jupyter_agent.runtime.run_kernel": "jupyter_agent.runtime.kernels.run_kernel",
    "jupyter_agent.runtime.run_opening": "jupyter_agent.runtime.runs.opening",
    "jupyter_agent.runtime.run_parts": "jupyter_agent.runtime.runs.parts",
    "jupyter_agent.runtime.run_programs": "jupyter_agent.runtime.programs.resolve",
    "jupyter_agent.runtime.run_records": "jupyter_agent.runtime.runs.records",
    "jupyter_agent.runtime.safe_paths": "jupyter_agent.runtime.notebook.safe_paths",
    "jupyter_agent.runtime.sandbox": "jupyter_agent.runtime.kernels.sandbox",
    "jupyter_agent.runtime.spaces": "jupyter_agent.runtime.settings.spaces",
    "jupyter_agent.runtime.tiersettings": "jupyter_agent.runtime.settings.tiers",
    "jupyter_agent.runtime.vector_index": "jupyter_agent.runtime.memory.vector_index",
    "jupyter_agent.server.handlers": "jupyter_agent.server.routes",
    "jupyter_agent.server.handlers_approvals": "jupyter_agent.server.approvals",
    "jupyter_agent.server.handlers_chats": "jupyter_agent.server.chats",
    "jupyter_agent.server.handlers_memory": "jupyter_agent.server.memory",
    "jupyter_agent.server.handlers_programs": "jupyter_agent.server.programs",
    "jupyter_agent.server.handlers_proposals": "jupyter_agent.server.proposals",
    "jupyter_agent.server.handlers_runs": "jupyter_agent.server.runs",
    "jupyter_agent.server.mcp_endpoint": "jupyter_agent.server.mcp.endpoint",
    "jupyter_agent.server.mcp_schemas": "jupyter_agent.server.mcp.schemas",
    "jupyter_agent.server.mcp_tools": "jupyter_agent.server.mcp.tools",
    "jupyter_agent.server.websocket": "jupyter_agent.server.events",
    "jupyter_agent.store.chunk_queries": "jupyter_agent.store.history.chunk_queries",
    "jupyter_agent.store.chunk_store": "jupyter_agent.store.history.chunk_store",
    "jupyter_agent.store.memory_queries": "jupyter_agent.store.memory.queries",
    "jupyter_agent.store.memory_store": "jupyter_agent.store.memory.store",
    "jupyter_agent.store.recall_index": "jupyter_agent.store.memory.recall_index",
    "jupyter_agent.store.recall_queries": "jupyter_agent.store.memory.recall_queries",
    "jupyter_agent.store.turn_queries": "jupyter_agent.store.history.turn_queries",
    "jupyter_agent.store.vector_search": "jupyter_agent.store.memory.vector_search",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the target module is already imported."""


class MovedModules(importlib.abc.MetaPathFinder):
    """A finder answering the old names of :data:`MOVED` (and nothing else)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


_FINDER: Final = MovedModules()


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
