"""What each version of the ``toolcaller`` program does: one frozen :class:`Features` record
per version, declared once (:data:`FEATURES`) and read by the loop instead of comparing
version numbers.

A log replays with the version its header names, so a version's record never changes: a
later version is the one before it plus what it adds (:func:`_then`). The versions:

- ``toolcaller@v1``: the first.
- ``toolcaller@v2`` (``failed_calls_count``): a model call that failed (after the
  transport's retries) counts in the turn's ``modelCalls``, and the failure reply says how
  many attempts were made.
- ``toolcaller@v3`` (``window``): the history is read as the window, not as the whole chat:
  ``config.get`` ``{key: "history", budget_tokens}`` is answered with only the newest turns
  that budget keeps and the count of the older ones (a
  :class:`~jupyter_agent.core.history.window.HistoryWindow`), so a run's log does not grow
  with the chat; the boot window is the prompt cache's prefix (``history_len``) and the turn
  record's ``llm.window``. A history that cannot be read ends the run ``error``, saying so
  (v1/v2 read ``config.get {key: "history"}``, the previous turn records, and went on
  without them).
- ``toolcaller@v4`` (``recall``, ``programs``, the ``memory`` app): after the window and the
  opening drain, ``config.get {key: "memory"}`` gives the memory categories in use with
  their counts (the system prompt lists them) and the recall settings; then
  ``autorecall@v1`` (:mod:`jupyter_agent.core.memory.program`) makes at most one
  ``recall.search`` and, with hits, injects a synthetic ``run_cell`` call and its result
  after the boot window and before the user's message. The turn record gains ``recall``
  and ``programs``.
- ``toolcaller@v5`` (``writes``, ``approvals``, ``notices``, ``cell_ids``, the ``notebook``
  app): ``run_cell`` and ``bash`` take ``writes: bool``; ``ceilings.approval`` makes a cell
  wait for the person (``approval.wait``) before it runs; drains ask for mailbox notices,
  which reach the model as ``[notice] ...`` lines; the user message header names the viewed
  cell by id.
- ``toolcaller@v6`` (``mcp``): after the memory read, ``config.get {key: "mcp"}`` gives the
  :class:`~jupyter_agent.core.mcp.catalogue.McpCatalogue`; with a server in it the prompt
  lists the ``mcp`` app (a line per tool) and names it among the installed apps, else the
  prompt is v5's.
- ``toolcaller@v7`` (``start``): ONE ``config.get {key: "start", tier: "codegen"}`` reads
  everything the set-up reads (:mod:`jupyter_agent.core.loop.start`: ceilings, spaces, the
  tier and its profile, the window, memory, the MCP catalogue, what recall could find),
  then the opening drain; ``recall.search`` only when recall is on and something is
  findable beyond the window (the answer's ``findable`` counts). Prompt and steps are
  v6's.
- ``toolcaller@v8`` (``person_kernel``): the prompt lists the ``notebook`` app's look at
  the person's live kernel (``variables``, ``inspect``, ``kernel_state``, ``fetch``,
  ``run``: :mod:`jupyter_agent.runtime.notebook.kernel_look`); steps are v7's.

Pure: data only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from jupyter_agent.core.app_spec import AppSpec
from jupyter_agent.core.loop.apps import apps_for
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM

__all__ = ["FEATURES", "PROGRAM", "PROGRAMS", "Features"]


@dataclass(frozen=True, kw_only=True)
class Features:
    """What one ``toolcaller`` version does (see the module docstring for each field's
    first version); :meth:`of` looks one up by its recorded name."""

    #: The recorded name, ``toolcaller@vN``.
    name: str
    #: ``N``.
    version: int
    #: A failed model call counts in ``modelCalls``; the failure reply names the attempts.
    failed_calls_count: bool = False
    #: The history is read as the boot window (``config.get history`` with a budget).
    window: bool = False
    #: Memory is read (``config.get memory``) and ``autorecall@v1`` runs before the first call.
    recall: bool = False
    #: The programs the turn record and the log header name (None: not recorded).
    programs: tuple[str, ...] | None = None
    #: The in-cell apps the system prompt lists (the kernel binds them all whatever this is).
    apps: tuple[AppSpec, ...] = ()
    #: ``run_cell`` and ``bash`` take ``writes: bool``.
    writes: bool = False
    #: ``ceilings.approval`` may make a cell wait for the person (``approval.wait``).
    approvals: bool = False
    #: Drains ask for mailbox notices (``{notices: true}``) and the model reads them.
    notices: bool = False
    #: A user message's header names the viewed cell by its id.
    cell_ids: bool = False
    #: ``config.get mcp`` is read; a configured server adds the ``mcp`` app to the prompt.
    mcp: bool = False
    #: One ``config.get start`` read; recall only when something is findable.
    start: bool = False
    #: A message taken after the last model call is not this turn's: the host starts the
    #: next turn with it (the turn's ``steering`` holds only what a model call read).
    unread_next: bool = False
    #: The same failing cell or command (same code, same error) three times ends the turn
    #: (end cause ``repeating``, a reply saying so) instead of running to a ceiling.
    repeat_stop: bool = False
    #: The prompt lists the ``notebook`` app's methods on the person's kernel.
    person_kernel: bool = False

    @classmethod
    def of(cls, name: str) -> Features:
        """The features of the recorded program ``name`` (a key of :data:`FEATURES`);
        ValueError for a version this code does not have."""
        features = FEATURES.get(name)
        if features is None:
            raise ValueError(f"unknown program {name!r}: this code has {', '.join(FEATURES)}")
        return features

    @classmethod
    def of_version(cls, version: int) -> Features:
        """The features of ``toolcaller@v{version}`` (ValueError for an unknown one)."""
        return cls.of(f"toolcaller@v{version}")


def _then(before: Features, **adds: Any) -> Features:
    """The version after ``before``: its features plus ``adds``; the name, the apps its
    prompt lists and, once recorded, its programs follow from the number."""
    version = before.version + 1
    name = f"toolcaller@v{version}"
    new = replace(before, name=name, version=version, apps=apps_for(version), **adds)
    if new.programs is not None:
        new = replace(new, programs=(name, *new.programs[1:]))
    return new


_V1: Final = Features(name="toolcaller@v1", version=1, apps=apps_for(1))
_V2: Final = _then(_V1, failed_calls_count=True)
_V3: Final = _then(_V2, window=True)
_V4: Final = _then(_V3, recall=True, programs=("toolcaller@v4", AUTORECALL_PROGRAM))
_V5: Final = _then(_V4, writes=True, approvals=True, notices=True, cell_ids=True)
_V6: Final = _then(_V5, mcp=True)
_V7: Final = _then(_V6, start=True, unread_next=True, repeat_stop=True)
_V8: Final = _then(_V7, person_kernel=True)

#: Every version this code runs and replays, by its recorded name.
FEATURES: Final[dict[str, Features]] = {f.name: f for f in (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8)}
#: The version new runs use.
PROGRAM: Final = _V8.name
#: Every version's number, by its recorded name.
PROGRAMS: Final[dict[str, int]] = {name: f.version for name, f in FEATURES.items()}
