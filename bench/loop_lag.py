"""A sampler of a process's main thread that records where its event loop is blocked.

Loaded into a ``jupyter server`` by a ``jupyter_server_config.py`` (see
``bench_status_load.py --lag``): :func:`start` runs a daemon thread that looks at the main
thread's Python stack every ``interval_s``. The loop is idle when the main thread sits in
``selectors.*.select`` (waiting in epoll); any other stack means a callback is running. A
busy stretch of at least ``threshold_s`` is written to ``path`` as one JSON line
``{"t", "ms", "samples": [[ms, stack], ...]}`` (each stack innermost frame first, as
``"file:line func"``; ``ms`` each sample stands for). :func:`rank` reads such a file back
into a ranked list of blocking sites.

The sampler needs the GIL to look, so it sees the main thread mostly where that thread
lets the GIL go (system calls, the 5 ms switch interval): its stacks lean towards I/O
calls, and a stretch that holds the GIL in C code is seen late. ``py-spy`` (``--spy`` in
the bench) samples without the GIL. No project code imports this: it is a bench tool.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["rank", "short", "site", "start"]

_PROJECT = "/jupyter_agent/"


def _idle(frame: FrameType | None) -> bool:
    return frame is None or (
        frame.f_code.co_name == "select" and frame.f_code.co_filename.endswith("selectors.py")
    )


def _stack(frame: FrameType | None, depth: int = 40) -> list[str]:
    out: list[str] = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        out.append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return out


def _sample(path: Path, threshold_s: float, interval_s: float) -> None:
    main = threading.main_thread().ident
    assert main is not None
    busy_since: float | None = None
    samples: list[list[Any]] = []
    last = flushed = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        while True:
            time.sleep(interval_s)
            now = time.perf_counter()
            frame = sys._current_frames().get(main)
            if busy_since is not None and now - busy_since >= 1.0 and now - flushed >= 1.0:
                # A stretch still going (maybe the process is stopped before it ends).
                going = {"t": time.time(), "ms": (now - busy_since) * 1e3, "open": True}
                out.write(json.dumps({**going, "stack": _stack(frame)}) + "\n")
                out.flush()
                flushed = now
            if _idle(frame):
                if busy_since is not None and now - busy_since >= threshold_s:
                    ms = (now - busy_since) * 1e3
                    line = {"t": time.time(), "ms": ms, "samples": samples}
                    out.write(json.dumps(line) + "\n")
                    out.flush()
                busy_since, samples = None, []
            else:
                if busy_since is None:
                    busy_since = last
                samples.append([(now - last) * 1e3, _stack(frame)])
            last = now
            del frame


def start(path: str | Path, *, threshold_s: float = 0.05, interval_s: float = 0.002) -> None:
    """Record every busy stretch of the main thread of at least ``threshold_s`` in ``path``."""
    thread = threading.Thread(
        target=_sample,
        args=(Path(path), threshold_s, interval_s),
        name="loop-lag-sampler",
        daemon=True,
    )
    thread.start()


def site(stack: list[str]) -> str:
    """The innermost project frame (else the innermost frame) with the leaf below it."""
    leaf = stack[0] if stack else "?"
    for frame in stack:
        if _PROJECT in frame and "/bench/" not in frame:
            here = frame.split(_PROJECT, 1)[1]
            return here if frame == leaf else f"{here} -> {short(leaf)}"
    # No project frame: the innermost frame outside the standard library's asyncio/selectors.
    for frame in stack:
        if "/asyncio/" not in frame and "selectors.py" not in frame:
            return short(frame)
    return short(leaf)


def short(frame: str) -> str:
    for marker in ("site-packages/", "/lib/python3"):
        if marker in frame:
            return frame.split(marker, 1)[1]
    return frame


def rank(path: str | Path, top: int = 12) -> list[dict[str, Any]]:
    """Blocking sites ranked by the total ms of long stretches spent in them.

    Each entry: ``{site, total_ms, stretches, max_stretch_ms, stack}`` (``stack``: the
    most common full stack of that site, innermost first, shortened).
    """
    total: dict[str, float] = defaultdict(float)
    count: Counter[str] = Counter()
    longest: dict[str, float] = defaultdict(float)
    stacks: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
    file = Path(path)
    if not file.exists():
        return []
    for raw in file.read_text(encoding="utf-8").splitlines():
        stretch = json.loads(raw)
        if stretch.get("open"):
            continue
        per_site: dict[str, float] = defaultdict(float)
        for ms, stack in stretch["samples"]:
            where = site(stack)
            per_site[where] += ms
            stacks[where][tuple(short(f) for f in stack[:14])] += 1
        for where, ms in per_site.items():
            total[where] += ms
            count[where] += 1
            longest[where] = max(longest[where], ms)
    ranked = sorted(total, key=lambda s: -total[s])[:top]
    return [
        {
            "site": where,
            "total_ms": total[where],
            "stretches": count[where],
            "max_stretch_ms": longest[where],
            "stack": list(stacks[where].most_common(1)[0][0]),
        }
        for where in ranked
    ]
