"""The completion service over one server's parts (:func:`completion_service`): the tiers a
run would get, the shared transport, the notebook's cells from the contents manager, the
variable names of the person's kernel."""

from __future__ import annotations

from typing import Any

from jupyter_agent.exceptions import AgentError, NotFound
from jupyter_agent.runtime.complete.service import CompletionService
from jupyter_agent.runtime.notebook.person_variables import PersonVariables
from jupyter_agent.runtime.notebook.safe_paths import notebook_path
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT

__all__ = ["completion_service"]


def completion_service(parts: Any, variables: PersonVariables) -> CompletionService:
    """The completion service of ``parts`` (the assembly's :class:`Parts`)."""

    async def cells(path: str) -> list[tuple[str, str]]:
        where = notebook_path(path, parts.root_dir).path
        try:
            nb = await parts.contents.read_notebook(where)
        except AgentError:
            raise
        except Exception:  # the contents manager's 404 (or an unreadable file)
            raise NotFound(f"no notebook {where}") from None
        return [
            (str(c.get("id") or ""), "".join(c.get("source") or ""))
            for c in (nb.get("cells") or [])
            if c.get("cell_type") == "code"
        ]

    async def names(path: str, owner: str) -> list[str]:
        found = await variables.variables(path, owner=owner)
        return [str(v.get("name")) for v in found.get("variables") or []]

    return CompletionService(
        run_config=parts.run_config,
        is_demo=lambda owner: parts.agent_settings.ready_tiers(
            parts.agents.for_run(DEFAULT_AGENT), owner
        )[1],
        transport=parts.transport,
        cells=cells,
        variables=names,
        rate_per_minute=lambda: parts.admin.complete_rate,
        scrub=lambda text: parts.scrubber.clean(text),
    )
