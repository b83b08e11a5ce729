"""The trace verbs of ``jupyter agent``: ``trace ls|show|prune``, ``replay``, ``export``.

Registered in :data:`jupyter_agent.cli.main.VERBS` by :func:`add_trace`, :func:`add_replay` and
:func:`add_export`. Output is rich text for people, ``--json`` for machines.

- ``trace ls [--program P] [--limit N] [--json]``: the server's runs, newest first.
- ``trace show RUN [--stats] [--full] [--json]``: turn, steps (messages, cells, bash,
  model calls), effects; ``--stats``: per model call and per turn tokens and cost. RUN is a
  run id on the server (with no server answering, the local runs folder's log), or a local
  log file.
- ``trace prune --older-than DAYS [--dry-run] [--db-url URL]``: local; deletes the run
  summaries started more than DAYS days ago (never a running one) from the local database
  and their logs under the local runs folder; then the deployed program versions no
  remaining run names and no layer has active (never a built-in), printing them.
- ``trace ls`` shows each run's program (its hashed ref) and agent; ``trace show`` every
  program the run used and its agent, and a program's failure.
- ``replay RUN|FILE [--db-url URL]``: a file replays that log; a run id is read from the
  local runs folder, else fetched from the server (``GET agent/runs/{id}?log=raw``). The
  recorded program versions are found by :mod:`jupyter_agent.cli.replay` (built-ins, the
  local store and program cache, else the server); a missing or changed version is one
  line, exit 2. Exit 0 when identical, 1 on a divergence (the seq, what was recorded,
  what was asked).
- ``export RUN -o FILE.ipynb [--force]``: a local log (and its turn from the local database,
  if any), else the server's ``GET agent/runs/{id}/notebook``; writes a valid notebook. An
  existing FILE is refused (nothing read or written) unless ``--force``.

Exit status 2 with one line on stderr for every expected failure (an unreachable server, a
refused or missing token, an unknown run, an unreadable log, a database error): never a
traceback. A run id that is neither in the local runs folder nor on the server is ``no such
run: RUN (...)`` naming both places looked in (the folder's path, the server's address);
a server that asks for a token when none was given is ``no token: pass --token or set
JUPYTER_TOKEN (...)``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

from jupyter_agent.cli.options import (
    Subparsers,
    add_server_options,
    connect,
    guarded,
    print_json,
)
from jupyter_agent.cli.render import plural, render_ls, render_show, render_stats, shown
from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.exceptions import CliFailure
from jupyter_agent.runtime.paths import default_db_url, runs_dir
from jupyter_agent.trace.log import TraceFile, read_log

__all__ = ["add_export", "add_replay", "add_trace"]

_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_T = TypeVar("_T")


def _run_from_server(
    args: argparse.Namespace, run_id: str, fetch: Callable[[AgentClient], _T], *, local: bool
) -> _T:
    """``fetch(client)`` for ``run_id``; the server's 404 is "no such run", naming where it
    was looked for. ``local``: it was looked for in the local runs folder first, so an
    unreachable server is "no such run" too (both places named)."""
    where = f"not in the local runs folder {runs_dir()}" if local else ""
    try:
        with connect(args) as agent:
            return fetch(agent)
    except ClientError as exc:
        addr = exc.addr or args.addr
        if where and exc.reason in ("unreachable", "timeout"):
            how = "could not be reached" if exc.reason == "unreachable" else "did not answer"
            server = f"the server at {addr} {how}"
            raise CliFailure(
                f"no such run: {run_id} ({where}; {server})", reason=exc.reason, addr=addr
            ) from None
        if exc.status == 404 and exc.reason != "no_route":
            nor = f"{where}, nor" if where else "not"
            raise CliFailure(
                f"no such run: {run_id} ({nor} on the server at {addr})",
                status=404,
                reason=exc.reason,
                addr=addr,
            ) from None
        if where and exc.reason == "no_token":
            raise CliFailure(
                f"no token: pass --token or set JUPYTER_TOKEN (run {run_id} is {where}; "
                f"the server at {addr} needs a token)",
                status=exc.status,
                reason=exc.reason,
                addr=addr,
            ) from None
        raise


def _local_log(run: str) -> Path | None:
    """A log file: ``run`` as a path, else ``runs_dir()/<run>.jsonl`` for a run id."""
    path = Path(run)
    if path.is_file():
        return path
    if _RUN_ID.match(run):
        local = runs_dir() / f"{run}.jsonl"
        if local.is_file():
            return local
    elif path.suffix == ".jsonl" or "/" in run:
        raise CliFailure(f"no such log file: {run}")
    return None


def _check_run_id(run: str) -> str:
    if not _RUN_ID.match(run):
        raise CliFailure(f"not a run id or a log file: {run}")
    return run


def _local_turn(run_id: str | None, db_url: str | None) -> Any:
    """The run's turn record from the local database, or None (no database, no turn)."""
    if not run_id:
        return None
    url = db_url or default_db_url()
    if db_url is None and not Path(url.removeprefix("sqlite:///")).is_file():
        return None  # never create the default database just to read it
    from jupyter_agent.store.repo import Store

    store = Store(url)
    try:
        return store.get_turn_by_run(run_id)
    finally:
        store.close()


# --- trace ls / show -------------------------------------------------------------------


@guarded
def _trace_ls(args: argparse.Namespace) -> int:
    with connect(args) as agent:
        page = agent.runs(
            program=args.program, limit=args.limit, before=args.before, owner=args.owner
        )
    if args.json:
        print_json(page)
    else:
        render_ls(page.get("runs") or [], page.get("next"), owners=args.owner is not None)
    return 0


@guarded
def _trace_show(args: argparse.Namespace) -> int:
    local: Path | None = Path(args.run)
    if local is not None and not local.is_file():
        local = None
    if local is None:
        run_id = _check_run_id(args.run)

        def fetch(client: AgentClient) -> tuple[dict[str, Any], dict[str, Any] | None]:
            body = client.run(run_id, full=args.full)
            return body, client.run_stats(run_id) if args.stats else None

        try:
            body, stats = _run_from_server(args, run_id, fetch, local=True)
        except CliFailure as exc:
            # No server to ask: the local runs folder's log, as replay and export read it.
            local = _local_log(run_id) if exc.reason in ("unreachable", "timeout") else None
            if local is None:
                raise
            print(f"jupyter agent: no server answered; the local log {local}", file=sys.stderr)
    if local is not None:
        from jupyter_agent.trace.show import show_run
        from jupyter_agent.trace.stats import run_stats

        trace = read_log(local)
        body = show_run(trace, full=args.full)
        stats = run_stats(trace) if args.stats else None
    if args.json:
        print_json({**body, "stats": stats} if stats is not None else body)
    elif stats is not None:
        render_stats(body, stats)
    else:
        render_show(body)
    return 0


# --- trace prune -----------------------------------------------------------------------


def _cutoff(days: float) -> str:
    at = datetime.now(timezone.utc) - timedelta(days=days)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@guarded
def _trace_prune(args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise CliFailure("--older-than must be a number of days >= 0")
    cutoff = _cutoff(args.older_than)
    url = args.db_url or default_db_url()
    if args.db_url is None and not Path(url.removeprefix("sqlite:///")).is_file():
        print(f"Nothing to prune: no database at {url.removeprefix('sqlite:///')}")
        return 0
    from jupyter_agent.store.repo import Store

    store = Store(url)
    try:
        ids = _prunable(store, cutoff) if args.dry_run else store.prune_runs(older_than=cutoff)
        versions = _prunable_programs(store, set(ids) if args.dry_run else None)
        if not args.dry_run:
            for row in versions:
                store.delete_program(row.name, row.version)
                _uncache(row.hash)
    finally:
        store.close()
    removed_logs = 0
    for run_id in ids:
        log = runs_dir() / f"{run_id}.jsonl"
        if log.is_file() and _RUN_ID.match(run_id):
            if not args.dry_run:
                log.unlink()
            removed_logs += 1
    verb = "Would remove" if args.dry_run else "Removed"
    runs, logs = plural(len(ids), "run"), plural(removed_logs, "log file")
    print(f"{verb} {runs} started before {cutoff} ({logs})")
    for run_id in ids:
        print(f"  {run_id}")
    if versions:
        what = plural(len(versions), "deployed program version")
        print(f"{verb} {what} no remaining run names and no agent runs:")
        for row in versions:
            print(f"  {row.name}@v{row.version}#{row.hash[:12]}")
    return 0


def _prunable_programs(store: Any, pruned: set[str] | None) -> list[Any]:
    """The deployed versions (never a built-in) that no run left names and that no layer
    has active. ``pruned``: the runs a dry run would delete (None: they are deleted)."""
    if pruned is None:
        named = store.named_programs()
    else:
        named = set()
        before: str | None = None
        while True:
            page, before = store.list_runs(limit=200, before=before)
            for run in page:
                if run.run_id not in pruned:
                    named.update((run.program, *run.programs))
            if before is None:
                break
    keys = {str(name).split("#", 1)[0] for name in named}
    active: dict[tuple[str, str], int | None] = {}
    for row in store.activations():  # oldest first: the newest of each layer wins
        active[(row.agent, row.name)] = row.version
    kept = {(name, version) for (_, name), version in active.items() if version is not None}
    return [
        row
        for row in store.programs()
        if f"{row.name}@v{row.version}" not in keys and (row.name, row.version) not in kept
    ]


def _uncache(full_hash: str) -> None:
    """Remove a pruned version's folder from the local program cache, if there."""
    import shutil

    from jupyter_agent.cli.replay import programs_cache_dir

    folder = programs_cache_dir() / full_hash
    if re.fullmatch(r"[0-9a-f]{64}", full_hash) and folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)


def _prunable(store: Any, cutoff: str) -> list[str]:
    """What :meth:`Store.prune_runs` would delete, read page by page."""
    ids: list[str] = []
    before: str | None = None
    while True:
        page, before = store.list_runs(limit=200, before=before)
        ids += [r.run_id for r in page if r.started < cutoff and r.status != "running"]
        if before is None:
            return ids


# --- replay / export -------------------------------------------------------------------


def _fetched_log(args: argparse.Namespace, run_id: str) -> TraceFile:
    text = _run_from_server(args, run_id, lambda client: client.run_log(run_id), local=True)
    with tempfile.TemporaryDirectory(prefix="jupyter-agent-replay-") as tmp:
        path = Path(tmp) / f"{run_id}.jsonl"
        path.write_text(text, encoding="utf-8")
        return read_log(path)


@guarded
def _replay(args: argparse.Namespace) -> int:
    from jupyter_agent.cli.replay import ReplayLoader
    from jupyter_agent.trace.verify import verify_run

    local = _local_log(args.run)
    trace = read_log(local) if local is not None else _fetched_log(args, _check_run_id(args.run))
    with ReplayLoader(args) as loader:
        outcome = verify_run(trace, loader.load)
    for note in outcome.notes:  # another build of a built-in: said, not a failure
        print(f"jupyter agent: note: {note}", file=sys.stderr)
    if args.json:
        print_json(outcome.to_json())
    elif outcome.identical:
        count = sum(1 for line in trace.lines if line.phase == "intent")
        failed = ""
        if outcome.failure is not None:
            error = outcome.failure.get("error") or {}
            failed = f"; its program failed again: {error.get('type')}: {error.get('message')}"
        print(
            f"identical: run {outcome.run_id} replayed with {outcome.program}"
            f" ({plural(count, 'effect')}{failed})"
        )
    else:
        print(f"diverged at seq {outcome.seq} in run {outcome.run_id}")
        print("recorded:")
        print(shown(outcome.recorded))
        print("asked:")
        print(shown(outcome.asked))
    return 0 if outcome.identical else 1


@guarded
def _export(args: argparse.Namespace) -> int:
    import nbformat

    from jupyter_agent.trace.notebook import run_notebook, write_notebook

    if Path(args.output).exists() and not args.force:
        raise CliFailure(f"{args.output} exists: pass --force to overwrite it", reason="exists")
    local = _local_log(args.run)
    if local is not None:
        trace = read_log(local)
        nb = run_notebook(
            trace, turn=_local_turn(trace.run_id, args.db_url), blobs_dir=Path(local).parent
        )
    else:
        run_id = _check_run_id(args.run)
        raw = _run_from_server(args, run_id, lambda client: client.run_notebook(run_id), local=True)
        nb = nbformat.from_dict(raw)  # type: ignore[no-untyped-call]
    try:
        write_notebook(nb, args.output)
    except nbformat.ValidationError as exc:
        raise CliFailure(f"the notebook is not valid: {str(exc).splitlines()[0]}") from None
    print(f"Wrote {args.output} ({plural(len(nb.cells), 'cell')})")
    return 0


# --- parsers ---------------------------------------------------------------------------


def add_trace(subparsers: Subparsers, more: Sequence[Callable[[Any], None]] = ()) -> None:
    """``trace ls|show|diff|prune``: ``more`` registers verbs kept in other modules
    (``diff``: :mod:`jupyter_agent.cli.diff`)."""
    trace = subparsers.add_parser("trace", help="list, show, diff and prune recorded runs")
    verbs = trace.add_subparsers(dest="trace_verb", required=True, metavar="{ls,show,diff,prune}")

    ls = verbs.add_parser("ls", help="the server's runs, newest first")
    add_server_options(ls)
    ls.add_argument(
        "--program",
        default=None,
        metavar="NAME[@vN]",
        help="only runs of this program: a name (every version: toolcaller) or one version "
        "(toolcaller@v1)",
    )
    ls.add_argument(
        "--owner",
        default=None,
        metavar="NAME",
        help="an admin only: NAME's runs, or '*' for every owner's (default: your own)",
    )
    ls.add_argument("--limit", type=int, default=None, help="at most N runs")
    ls.add_argument(
        "--before",
        default=None,
        metavar="CURSOR",
        help="the next page: the cursor a listing ended with",
    )
    ls.add_argument("--json", action="store_true", help="print the JSON answer")
    ls.set_defaults(handler=_trace_ls)

    show = verbs.add_parser("show", help="one run: turn, cells, effects, results")
    add_server_options(show)
    show.add_argument("run", metavar="RUN", help="a run id, or a local .jsonl log")
    show.add_argument("--stats", action="store_true", help="tokens and cost per model call")
    show.add_argument("--full", action="store_true", help="do not cut large fields")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_trace_show)

    for add_verb in more:
        add_verb(verbs)

    prune = verbs.add_parser("prune", help="delete old runs from the local database and store")
    prune.add_argument(
        "--older-than", type=float, required=True, metavar="DAYS", help="runs older than DAYS"
    )
    prune.add_argument("--dry-run", action="store_true", help="only list what would go")
    prune.add_argument("--db-url", default=None, help="the database (default: the local one)")
    prune.set_defaults(handler=_trace_prune)


def add_replay(subparsers: Subparsers) -> None:
    """``replay RUN|FILE``."""
    replay = subparsers.add_parser("replay", help="replay a run's log and check it is identical")
    add_server_options(replay)
    replay.add_argument("run", metavar="RUN|FILE", help="a run id or a .jsonl log file")
    replay.add_argument(
        "--db-url",
        default=None,
        help="the database holding deployed program versions (default: the local one)",
    )
    replay.add_argument("--json", action="store_true", help="print the outcome as JSON")
    replay.set_defaults(handler=_replay)


def add_export(subparsers: Subparsers) -> None:
    """``export RUN -o FILE.ipynb``."""
    export = subparsers.add_parser("export", help="export a run as a notebook")
    add_server_options(export)
    export.add_argument("run", metavar="RUN", help="a run id or a .jsonl log file")
    export.add_argument("-o", "--output", required=True, metavar="FILE.ipynb")
    export.add_argument("--db-url", default=None, help="the local database, for the turn record")
    export.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    export.set_defaults(handler=_export)
