"""Compact tracebacks: what the model sees of an exception raised by a cell.

Contract of :func:`compact_traceback`:

- ANSI colour codes are stripped; IPython's separator and header lines are dropped.
- Every frame in the cell's own code is kept (IPython shows them as ``Cell In[3], line 2``,
  older versions as ``<ipython-input-...>`` or ``Input In [3]``, ipykernel as a file under
  an ``ipykernel_<pid>`` temp folder), as its location line plus the line that ran
  (IPython's ``---->`` arrow line, or the indented source line of a plain traceback).
- Of the library frames, the innermost one of each exception is kept; the others are elided
  as ``… N library frames …``. IPython's ``[... skipping similar frames ...]`` notes stay.
- Chained exceptions keep their ``The above exception ...`` sentence; the last
  :data:`MAX_SECTIONS` are shown. The final ``ename: evalue`` line is dropped (the digest
  prints it in its ``Error:`` line); the exception lines of earlier links are kept.
- A traceback without frames (``SyntaxError``: location, source line, caret) is kept
  verbatim, because the caret's column matters.
- A section keeps at most :data:`MAX_FRAMES` frames (deep recursion in cell code); every
  line is cut to :data:`MAX_LINE` characters. Paths are normalised when options are given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jupyter_agent.core.paths import normalize_paths

if TYPE_CHECKING:
    from jupyter_agent.core.digest.options import DigestOptions

__all__ = ["MAX_FRAMES", "MAX_LINE", "MAX_SECTIONS", "compact_traceback", "strip_ansi"]

MAX_FRAMES = 12
MAX_LINE = 300
MAX_SECTIONS = 3

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_SEPARATOR = re.compile(r"^-{20,}$")
_IPY_HEADER = re.compile(r"^\S.*\s+Traceback \(most recent call last\)$")
_PY_HEADER = "Traceback (most recent call last):"
_CHAIN = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_IPY_FRAME = re.compile(r"^(Cell In\s*\[|Input In\s*\[|File \S|<ipython-input-)")
_PY_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_SKIP = re.compile(r"^\s*\[(\.\.\. skipping|Previous line repeated)")
_ARROW = re.compile(r"^\s*-*>\s*\d+")
_CELL_MARKERS = ("Cell In[", "Cell In [", "Input In [", "Input In[", "<ipython-input-")
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return _ANSI.sub("", text)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


@dataclass
class _Frame:
    location: str
    body: list[str] = field(default_factory=list)
    skip: bool = False  # an IPython / Python "skipping similar frames" note, not a frame

    @property
    def in_cell(self) -> bool:
        loc = self.location.lstrip()
        return loc.startswith(_CELL_MARKERS) or "ipykernel_" in loc

    def render(self) -> list[str]:
        if self.skip:
            return [self.location.strip()]
        ran = [ln for ln in self.body if _ARROW.match(ln)]
        if not ran and _PY_FRAME.match(self.location):
            # A plain traceback: the source line (and any ^^^ carets) under "File ...".
            ran = [ln for ln in self.body if ln.strip()]
        return [_cut(self.location.rstrip()), *(_cut(ln.rstrip()) for ln in ran)]


@dataclass
class _Section:
    frames: list[_Frame] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # the exception line(s) after the frames
    chain: str = ""  # the sentence that links it to the previous section


def _parse(lines: list[str]) -> list[_Section]:
    sections = [_Section()]
    current: _Frame | None = None
    for line in lines:
        stripped = line.strip()
        if not stripped or _SEPARATOR.match(stripped):
            continue
        if stripped in _CHAIN:
            sections.append(_Section(chain=stripped))
            current = None
        elif _IPY_HEADER.match(stripped) or stripped == _PY_HEADER:
            current = None
        elif _SKIP.match(line):
            sections[-1].frames.append(_Frame(location=line, skip=True))
            current = None
        elif _IPY_FRAME.match(line) or _PY_FRAME.match(line):
            current = _Frame(location=line)
            sections[-1].frames.append(current)
        elif current is not None and (line.startswith((" ", "\t")) or _ARROW.match(line)):
            current.body.append(line)
        else:
            current = None
            sections[-1].tail.append(line.rstrip())
    return [s for s in sections if s.frames or s.tail or s.chain]


def _elision(count: int, all_library: bool) -> str:
    kind = "library frame" if all_library else "frame"
    return f"… {count} {kind}{'' if count == 1 else 's'} …"


def _compact_frames(frames: list[_Frame]) -> list[str]:
    library = [i for i, f in enumerate(frames) if not f.skip and not f.in_cell]
    kept = [i for i, f in enumerate(frames) if f.skip or f.in_cell]
    if library:
        kept.append(library[-1])
        kept.sort()
    if len(kept) > MAX_FRAMES:
        # Deep recursion in cell code: the outermost and innermost frames tell the story.
        kept = kept[: MAX_FRAMES // 2] + kept[-(MAX_FRAMES // 2) :]
    keep = set(kept)
    out: list[str] = []
    elided = 0
    all_library = True
    for i, frame in enumerate(frames):
        if i in keep:
            if elided:
                out.append(_elision(elided, all_library))
                elided, all_library = 0, True
            out.extend(frame.render())
        elif not frame.skip:
            elided += 1
            all_library = all_library and not frame.in_cell
    if elided:
        out.append(_elision(elided, all_library))
    return out


def _is_final_exception(line: str, ename: str, evalue: str) -> bool:
    first = evalue.splitlines()[0] if evalue else ""
    return line in (f"{ename}: {first}", f"{ename}:{first}", ename) or (
        bool(line) and line.split(":", 1)[0].rsplit(".", 1)[-1] == ename
    )


def compact_traceback(
    traceback: Sequence[str],
    *,
    ename: str,
    evalue: str,
    options: DigestOptions | None = None,
) -> str:
    """The compact form of an IPython or plain Python traceback (see the module docstring).

    ``traceback`` is the list the kernel reports (elements may hold several lines, with
    ANSI codes); ``ename``/``evalue`` name the exception the cell raised. Returns "" when
    nothing useful is left.
    """
    text = strip_ansi("\n".join(traceback))
    lines = text.splitlines()
    sections = _parse(lines)
    if not any(s.frames for s in sections):
        # No frames (SyntaxError and friends): keep it verbatim minus the final error line.
        kept = [ln.rstrip() for ln in lines if ln.strip()]
        while kept and _is_final_exception(kept[-1].strip(), ename, evalue):
            kept.pop()
        result = "\n".join(_cut(ln) for ln in kept[-MAX_FRAMES * 2 :])
    else:
        out: list[str] = []
        if len(sections) > MAX_SECTIONS:
            dropped = len(sections) - MAX_SECTIONS
            sections = sections[-MAX_SECTIONS:]
            out.append(f"… {dropped} earlier chained exception{'s' if dropped > 1 else ''} …")
        for n, section in enumerate(sections):
            if section.chain and out:
                out.append(section.chain)
            out.extend(_compact_frames(section.frames))
            tail = section.tail
            if n == len(sections) - 1:
                # The digest's "Error:" line already says ename: evalue. Multi-line
                # evalues leave their continuation lines here too: drop everything
                # from the final exception line on.
                for j, ln in enumerate(tail):
                    if _is_final_exception(ln.strip(), ename, evalue):
                        tail = tail[:j]
                        break
            out.extend(_cut(ln) for ln in tail[:MAX_FRAMES])
        result = "\n".join(out)
    if options is not None:
        result = normalize_paths(result, env_prefix=options.env_prefix, home=options.home)
    return result
