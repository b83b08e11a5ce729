"""The host side of the in-cell ``notebook`` app: ``notebook.read`` and ``notebook.propose``.

Called by :func:`jupyter_agent.runtime.loop.apphost.perform_app_call` (each call is one logged
``app.call`` effect of the cell). Contracts:

- Paths go through :func:`~jupyter_agent.runtime.notebook.safe_paths.notebook_path` first
  (``PathRefused``: outside the root, hidden, a symlink out, not ``.ipynb``); the file is
  read at the path's resolved target, resolved again right before and after the read. ``path=None``
  is the viewed notebook: the ``view.path`` of the newest message the run took (the
  opening one, or a later steering message with a view); no view is a clear error naming
  ``path=``.
- ``read``: the notebook as it is now, through ``services.notebooks``
  (:class:`NotebookSource`: the live document when the notebook is open with real-time
  collaboration, else the contents manager). Every string is passed through the run's
  scrubber first, then :func:`~jupyter_agent.core.notebook.digest.read_cells` bounds it
  and digests it (in a worker thread: a big notebook never blocks the event loop). The
  value (the app call's logged result, bounded by the digest module's caps: about 200 KB
  of output text and 1 MB of sources at most; images are placeholders) is ``{path,
  revision, via, last_modified, digest, tokens, cut, cells}``; the kernel wraps it in a
  :class:`~jupyter_agent.kernel.notebook_view.NotebookView`. The person's cell (the view's
  ``cell_id``, else its ``cell`` index) is the digest's focus when the notebook is the
  viewed one. Cells of a notebook older than nbformat 4.5 show the ids the proposals use
  (``cell-<index>``: :func:`~jupyter_agent.core.notebook.proposals.with_cell_ids`).
- ``propose``: reads the notebook fresh (the cells the edits are checked against; when this
  run read the notebook before and it changed since, the call is refused: read it again),
  asks
  ``services.proposals`` (:class:`Proposals`) to create the proposal (it checks the edits:
  a bad edit is the call's error, with the reason for the model; it publishes the
  ``proposal`` event) and returns its id at once. Nothing in the notebook changes unless
  the run's approval policy (``ceilings["approval"]``; absent: ``none``) is ``none``: then
  it is applied at once, as the agent (the outcome reaches the model as a notice; a
  conflict is the call's error naming the proposal). The ids of inserted cells are
  seeded with ``run_id:seq`` of the call. An edit whose source holds a known secret or a
  ``[redacted: ...]`` marker is refused (:func:`_no_secrets`).
- Errors the model can act on are :class:`~jupyter_agent.exceptions.AgentError`; a
  contents manager's own error (a missing file: its 404) becomes one naming the path.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from jupyter_core.utils import ensure_async

from jupyter_agent.core.notebook.digest import NotebookOptions, read_cells, revision_of
from jupyter_agent.core.notebook.proposals import with_cell_ids
from jupyter_agent.exceptions import AgentError, NotFound, RequestError
from jupyter_agent.runtime.notebook.contents import shown
from jupyter_agent.runtime.notebook.kernel_look import KERNEL_METHODS, perform_kernel_call
from jupyter_agent.runtime.notebook.safe_paths import notebook_path

if TYPE_CHECKING:
    from jupyter_agent.runtime.loop.apphost import AppCall, AppDriver
    from jupyter_agent.runtime.notebook.contents import Contents

__all__ = [
    "NOTEBOOK_IN_CELL",
    "NotebookReader",
    "NotebookSource",
    "Proposals",
    "ReadNotebook",
    "perform_notebook_call",
]

#: Who applied a proposal under the ``none`` approval policy, as the model's notice says.
AUTO_APPLIED_BY = "the host at once (approval policy none)"
#: How a redacted secret starts in what the model read (``runtime.secrets.marker``).
REDACTED = "[redacted: "


@dataclass(frozen=True, kw_only=True)
class ReadNotebook:
    """A notebook as read: its nbformat JSON, where it came from and its file's mtime."""

    nb: dict[str, Any]
    via: str  # "live" or "contents"
    last_modified: str | None = None

    @property
    def cells(self) -> list[dict[str, Any]]:
        """The nbformat cells (``[]`` for a notebook without any)."""
        cells = self.nb.get("cells")
        return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


class NotebookSource(Protocol):
    """Where the app reads notebooks (``services.notebooks``)."""

    async def read(self, path: str) -> ReadNotebook:
        """The notebook at the clean contents path ``path``; AgentError if it cannot."""
        ...


class Proposals(Protocol):
    """What the app needs of the proposal service (``services.proposals``)."""

    def create(
        self,
        *,
        owner: str,
        chat_id: str,
        run_id: str,
        cell_id: str,
        path: str,
        edits: Any,
        cells_at_read: list[dict[str, Any]],
        id_seed: str | None = None,
    ) -> Any:
        """Check and store the proposal (publishing ``proposal``); its row (``.id``) or an
        awaitable of it; BadRequest for a bad edit."""
        ...

    def decide(
        self,
        proposal_id: str,
        *,
        owner: str,
        apply: bool,
        cells: list[str] | None,
        by: str = "the person",
    ) -> Any:
        """Apply or discard a pending proposal; the outcome (or an awaitable of it); ``by``
        names who decided in the model's notice."""
        ...


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class NotebookReader:
    """:class:`NotebookSource` over the contents manager, and the live documents of
    real-time collaboration when ``live`` (``runtime.live_docs.LiveDocs``) is given: its
    ``read_notebook(path)`` answers the live document's nbformat JSON, or None when no
    room is open (then the contents manager is read)."""

    def __init__(self, contents: Contents, live: Any = None) -> None:
        self.contents = contents
        self.live = live

    async def read(self, path: str) -> ReadNotebook:
        reader = getattr(self.live, "read_notebook", None)
        if reader is not None:
            nb = await _maybe(reader(path))
            if isinstance(nb, dict):
                return ReadNotebook(nb=nb, via="live")
        if not self.contents.available:
            raise AgentError("this server has no contents manager: notebooks cannot be read")
        safe = notebook_path(path, self.contents.root_dir)
        try:
            model = await ensure_async(
                self.contents.writer().get(safe.confirm(), content=True, type="notebook")
            )
            safe.confirm()  # read from where the path led: else the content is dropped
        except RequestError:
            raise
        except Exception as exc:  # the contents manager's HTTPError (404, 400), OSError
            if getattr(exc, "status_code", None) == 404:
                raise NotFound(f"no notebook {shown(path)} under the server's root") from None
            why = getattr(exc, "log_message", None) or type(exc).__name__
            raise AgentError(f"cannot read the notebook {shown(path)}: {why}") from None
        modified = model.get("last_modified")
        stamp = modified.isoformat() if hasattr(modified, "isoformat") else modified
        content = model.get("content")
        # A notebook before nbformat 4.5 has no cell ids: the proposals' ids (cell-<index>).
        nb = await asyncio.to_thread(with_cell_ids, content if isinstance(content, dict) else {})
        return ReadNotebook(
            nb=nb,
            via="contents",
            last_modified=str(stamp) if stamp is not None else None,
        )


def _viewed(driver: AppDriver) -> dict[str, Any]:
    view = getattr(driver, "view", None)
    return view if isinstance(view, dict) else {}


def _path_of(driver: AppDriver, raw: Any) -> str:
    if raw is None:
        viewed = _viewed(driver).get("path")
        if not isinstance(viewed, str) or not viewed:
            raise AgentError(
                "no notebook is open in the person's view: name one with path=, e.g. "
                "notebook.read(path='analysis/sales.ipynb')"
            )
        raw = viewed
    return notebook_path(raw, driver.services.root_dir).path


def _source(driver: AppDriver) -> NotebookSource:
    source = getattr(driver.services, "notebooks", None)
    if source is None:
        raise AgentError("notebooks are not available on this server (no contents manager)")
    return source  # type: ignore[no-any-return]


def _options(driver: AppDriver) -> NotebookOptions:
    spaces = driver.config.spaces if isinstance(driver.config.spaces, dict) else {}
    return NotebookOptions(
        env_prefix=str(spaces.get("env_prefix", "")), home=str(spaces.get("home", ""))
    )


def _focus(driver: AppDriver, path: str) -> str | int | None:
    view = _viewed(driver)
    viewed = view.get("path")
    if not isinstance(viewed, str) or viewed.strip().lstrip("/") != path:
        return None
    cell_id, index = view.get("cell_id"), view.get("cell")
    if isinstance(cell_id, str) and cell_id:
        return cell_id
    return index if isinstance(index, int) and not isinstance(index, bool) else None


async def _read(driver: AppDriver, args: dict[str, Any]) -> dict[str, Any]:
    path = _path_of(driver, args.get("path"))
    read = await _source(driver).read(path)
    scrubber = driver.services.scrubber
    options, focus = _options(driver), _focus(driver, path)

    def digest() -> dict[str, Any]:
        _remember_read(driver.run_id, path, revision_of(read.cells))
        cells = scrubber.clean_json(read.cells)
        result = read_cells(path, cells, options, focus=focus)
        return {
            "path": path,
            "revision": result.revision,
            "via": read.via,
            "last_modified": read.last_modified,
            "digest": result.text,
            "tokens": result.tokens,
            "cut": result.cut,
            "cells": result.cells,
        }

    return await asyncio.to_thread(digest)


def _no_secrets(driver: AppDriver, edits: list[Any]) -> None:
    """Refuse an edit whose source holds a secret the server knows (it would reach the
    ``proposal`` event and the store row) or a redaction marker (the model read the cell
    scrubbed: writing the marker back would replace the person's secret with it)."""
    scrubber = driver.services.scrubber
    for index, edit in enumerate(edits):
        source = edit.get("source") if isinstance(edit, dict) else None
        if not isinstance(source, str):
            continue
        if scrubber.spans(source):
            raise AgentError(
                f"edit {index}: its source holds a secret the server knows; a proposal "
                "never carries one (read it in the person's notebook from an env var)"
            )
        if REDACTED in source:
            raise AgentError(
                f"edit {index}: its source holds a {REDACTED}...] marker: you read that "
                "cell with its secret redacted, and writing the marker back would replace "
                "the person's secret; leave that line out of the edit or ask the person"
            )


#: The revision (over the unscrubbed cells) of each notebook a run read, newest last:
#: ``propose`` refuses edits made against an older text. Bounded: old runs fall out.
_READS: OrderedDict[tuple[str, str], str] = OrderedDict()
_READS_KEPT = 1024


def _remember_read(run_id: str, path: str, revision: str) -> None:
    _READS[(run_id, path)] = revision
    _READS.move_to_end((run_id, path))
    while len(_READS) > _READS_KEPT:
        _READS.popitem(last=False)


def _no_secret_cells(driver: AppDriver, edits: list[Any], cells: list[dict[str, Any]]) -> None:
    """Refuse to replace or delete a cell whose source holds a secret the server knows: the
    proposal keeps the old source (its diff, its undo) in the event and the store row,
    where no known secret may go. The person edits such a cell by hand."""
    scrubber = driver.services.scrubber
    sources = {
        str(c.get("id")): c.get("source") for c in cells if isinstance(c, dict) and c.get("id")
    }
    for index, edit in enumerate(edits):
        if not isinstance(edit, dict) or edit.get("op") not in ("replace", "delete"):
            continue
        source = sources.get(str(edit.get("cell_id")))
        text = "".join(source) if isinstance(source, list) else source
        if isinstance(text, str) and scrubber.spans(text):
            raise AgentError(
                f"edit {index}: cell {edit.get('cell_id')!r} holds a secret (you read it "
                "redacted): a proposal cannot replace or delete it; ask the person to "
                "edit that cell"
            )


async def _propose(driver: AppDriver, args: dict[str, Any], cell_id: str, seq: int) -> str:
    proposals = getattr(driver.services, "proposals", None)
    if proposals is None:
        raise AgentError("proposals are not available on this server")
    path = _path_of(driver, args.get("path"))
    edits = args.get("edits")
    if not isinstance(edits, list) or not edits:
        raise AgentError(
            "edits must be a non-empty list of edit dicts, e.g. "
            '[{"op": "replace", "cell_id": "...", "source": "...", "reason": "..."}]'
        )
    _no_secrets(driver, edits)
    read = await _source(driver).read(path)
    seen = _READS.get((driver.run_id, path))
    if seen is not None and seen != await asyncio.to_thread(revision_of, read.cells):
        # The person changed the notebook since this run read it: edits written against
        # the old text must not land on theirs (with approval none nobody would review it).
        raise AgentError(
            f"{path} changed since you read it (the person edited it): call "
            "notebook.read() again and propose against what it holds now"
        )
    _no_secret_cells(driver, edits, read.cells)
    row = await _maybe(
        proposals.create(
            owner=driver.owner,
            chat_id=driver.chat_id,
            run_id=driver.run_id,
            cell_id=cell_id,
            path=path,
            edits=edits,
            cells_at_read=read.cells,
            id_seed=f"{driver.run_id}:{seq}",  # the new cells' ids: the same in a replay
        )
    )
    proposal_id = str(getattr(row, "id", row))
    if str(driver.config.ceilings.get("approval") or "none") == "none":
        try:
            await _maybe(
                proposals.decide(
                    proposal_id, owner=driver.owner, apply=True, cells=None, by=AUTO_APPLIED_BY
                )
            )
        except AgentError as err:  # a conflict: the proposal is finished as such
            raise AgentError(
                f"proposal {proposal_id} was made but could not be applied: {err}"
            ) from None
    return proposal_id


async def perform_notebook_call(
    driver: AppDriver, method: str, args: dict[str, Any], *, seq: int, cell_id: str = ""
) -> Any:
    """Perform ``notebook.<method>`` (the app call at ``seq``) for the agent cell
    ``cell_id``; the JSON value."""
    if method == "read":
        return await _read(driver, args)
    if method == "propose":
        return await _propose(driver, args, cell_id, seq)
    if method in KERNEL_METHODS:
        return await perform_kernel_call(driver, method, args, seq=seq)
    raise AgentError(f"unknown app method notebook.{method}")


class _NotebookInCell:
    """The ``notebook`` app as the app host's table holds it."""

    dynamic = False

    def mutating(self, driver: AppDriver, method: str) -> bool:
        return False  # the static app table says (``propose`` mutates)

    def refuse(
        self, driver: AppDriver, method: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], str] | None:
        return None

    async def perform(self, driver: AppDriver, call: AppCall) -> Any:
        return await perform_notebook_call(
            driver, call.method, call.args, seq=call.seq, cell_id=call.cell_id
        )


#: The in-cell ``notebook`` app (:mod:`jupyter_agent.runtime.loop.app_table` registers it).
NOTEBOOK_IN_CELL: Final = _NotebookInCell()
