"""What the model reads of a notebook: ``notebook.read()``'s bounded cells and its digest.

:func:`read_cells` turns nbformat v4 cells (dicts, as the contents manager or a live
document gives them) into a :class:`NotebookRead`: ``cells``, the bounded JSON the kernel's
view object holds (``{id, cell_type, source, outputs, execution_count}``, each output as
its text), and ``text``, the digest its ``repr`` shows. Layout of the digest::

    Notebook analysis/sales.ipynb (3 cells: 2 code, 1 markdown; revision 3fa2c1d9e0b4)
    nb is what notebook.read() returned: nb.cells[i], nb.output(cell_id, n)
    [0] markdown id=intro
      # Sales
    [1] code id=load In[2]
      df = pd.read_csv("sales.csv")
      [out 1] <stub: stream 12,345 chars (~3,087 tokens); head: 'a,b…'; get it whole with
      nb.output("load", 1)>
    [2] code id=fit In[3]  <- the person's cell
      ...
      [out 1] error: ValueError: bad shape
        <compact traceback>

Contract:

- Cells are numbered by index from 0 (``nb.cells[i]``, the view's ``cell``); outputs from
  1 (``nb.output(cell_id, n)``, like ``values.get``). A cell without an id shows ``id=?``.
- An output's text (:func:`output_text`): a stream's text; an execute result's or a
  display's ``text/plain`` (markdown or LaTeX when plain is only an object repr), each
  image as ``<image/png 640x480 12 KB>``, other rich types as ``<text/html 3 KB>``; an
  error as ``ename: evalue`` and its traceback without ANSI codes.
- Bounds of :data:`cells` (what the app call's result logs and the kernel keeps): each
  output text at most ``output_cap`` characters and all of a read's output texts at most
  ``outputs_cap``; each source at most ``source_cap`` and all sources ``sources_cap``;
  beyond, the text is cut and ends with :data:`CUT_MARK` and the full length.
- The digest: an output over ``output_chars`` becomes a stub (size, head, the call that
  returns it whole); an error shows its compact traceback
  (:mod:`~jupyter_agent.core.digest.tracebacks`); a source over ``source_chars`` shows its head
  and where the whole is. When the whole does not fit ``budget_tokens`` (the fixed
  counter of :mod:`~jupyter_agent.core.tokens`), cells farthest from the focus (the
  person's cell; else the last one run; else the first) are shortened first (source
  head, one line per output), then cut to one outline line, then left out in ranges
  (``[7]…[40] 34 cells not shown: nb.cells[7:41]``). The header always shows.
- Pure and deterministic; work is bounded by the caps and the number of cells.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.core.digest.parts import DIGEST_MIME, IMAGE_TYPES, image_size, size_text
from jupyter_agent.core.digest.tracebacks import compact_traceback, strip_ansi
from jupyter_agent.core.paths import normalize_paths
from jupyter_agent.core.tokens import chars_for_tokens, count_tokens

__all__ = [
    "CUT_MARK",
    "DIGEST_MIME",
    "MAX_BUDGET_TOKENS",
    "NotebookOptions",
    "NotebookRead",
    "output_text",
    "read_cells",
    "revision_of",
]

#: What ends a text the bounds cut (then `` N chars in all]``).
CUT_MARK: Final = "\n… [cut by the host:"
#: The most a digest may be: the kernel keeps a last value's repr whole up to 20,000 chars.
MAX_BUDGET_TOKENS: Final = 4500
_OUTPUTS_SHOWN = 6  # outputs of one cell the digest lists at full detail
_HEAD_LINES = 3  # source lines a shortened cell keeps
_GAP_CHARS = 70  # about the length of a "cells not shown" line
_OBJECT_REPR_PREFIX = ("<", "[<")


@dataclass(frozen=True, kw_only=True)
class NotebookOptions:
    """Budgets and bounds of a read (see the module docstring)."""

    budget_tokens: int = 4000
    output_chars: int = 800
    source_chars: int = 3000
    output_cap: int = 50_000
    outputs_cap: int = 200_000
    source_cap: int = 100_000
    sources_cap: int = 1_000_000
    env_prefix: str = ""
    home: str = ""


@dataclass(frozen=True, kw_only=True)
class NotebookRead:
    """One read: ``cells`` (bounded JSON), ``text`` (the digest) and what it stubbed."""

    path: str
    revision: str
    cells: list[dict[str, Any]]
    text: str
    tokens: int
    stubbed: tuple[str, ...]
    cut: bool


def _text(value: Any) -> str:
    if isinstance(value, list):  # nbformat on disk splits multi-line strings
        return "".join(str(x) for x in value)
    return value if isinstance(value, str) else ""


def revision_of(cells: Sequence[Mapping[str, Any]]) -> str:
    """A short hash of the cells' ids, types and sources (outputs do not count)."""
    digest = hashlib.sha256()
    for cell in cells:
        item = [str(cell.get("id") or ""), str(cell.get("cell_type")), _text(cell.get("source"))]
        digest.update(json.dumps(item).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:12]


def _kb(chars: int) -> str:
    return f"{max(1, round(chars / 1024)):,} KB"


def _image(mime: str, data: Any) -> str:
    raw = _text(data)
    head = "".join(raw[:12_000].split())
    head = head[: len(head) - len(head) % 4]
    try:
        size = image_size(mime, base64.b64decode(head))
    except (binascii.Error, ValueError):
        size = None
    dims = f" {size[0]}x{size[1]}" if size else ""
    return f"<{mime}{dims} {_kb(len(raw) * 3 // 4)}>"


def _plain(bundle: Mapping[str, Any]) -> str:
    plain = _text(bundle.get("text/plain"))
    if not plain or plain.strip().startswith(_OBJECT_REPR_PREFIX):
        for mime in ("text/markdown", "text/latex"):
            if mime in bundle:
                return _text(bundle[mime])
    return plain


def output_text(output: Mapping[str, Any]) -> str:
    """The text of one nbformat output, as ``nb.output`` returns it (module docstring)."""
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text"))
    if kind == "error":
        head = f"{output.get('ename', '')}: {output.get('evalue', '')}"
        tb = strip_ansi("\n".join(_text(t) for t in output.get("traceback") or ()))
        return f"{head}\n{tb}" if tb.strip() else head
    data = output.get("data")
    bundle: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    parts = [_image(m, bundle[m]) for m in IMAGE_TYPES if m in bundle]
    plain = _plain(bundle)
    if not plain:
        for mime in sorted(bundle):
            if mime not in (*IMAGE_TYPES, "text/plain", "text/markdown", "text/latex"):
                parts.append(f"<{mime} {_kb(len(_text(bundle[mime])))}>")
    if plain:
        parts.append(plain)
    return "\n".join(parts)


def _cut(text: str, cap: int) -> tuple[str, bool]:
    if len(text) <= cap:
        return text, False
    return text[:cap] + f"{CUT_MARK} {len(text):,} chars in all]", True


class _Room:
    """What is left of one of a read's total caps."""

    def __init__(self, total: int) -> None:
        self.left = total

    def take(self, text: str, cap: int) -> tuple[str, bool]:
        kept, cut = _cut(text, max(0, min(cap, self.left)))
        self.left -= min(len(text), cap)
        return kept, cut


def _bounded_cells(
    cells: Sequence[Mapping[str, Any]], options: NotebookOptions
) -> tuple[list[dict[str, Any]], bool]:
    outputs_room, sources_room = _Room(options.outputs_cap), _Room(options.sources_cap)
    out: list[dict[str, Any]] = []
    any_cut = False
    for cell in cells:
        source, cut = sources_room.take(_text(cell.get("source")), options.source_cap)
        any_cut |= cut
        texts = []
        for output in cell.get("outputs") or ():
            text, cut = outputs_room.take(
                output_text(output) if isinstance(output, Mapping) else "", options.output_cap
            )
            any_cut |= cut
            texts.append(text)
        count = cell.get("execution_count")
        out.append(
            {
                "id": str(cell["id"]) if cell.get("id") else None,
                "cell_type": str(cell.get("cell_type") or "code"),
                "source": source,
                "outputs": texts,
                "execution_count": count if isinstance(count, int) else None,
            }
        )
    return out, any_cut


def _indent(text: str, by: str) -> list[str]:
    return [f"{by}{ln}" if ln else "" for ln in text.split("\n")]


def _preview(text: str, chars: int) -> str:
    r = repr(text[:chars])
    return r[:-1] + ("…" + r[-1] if len(text) > chars else r[-1])


class _Render:
    """The renderings of one cell at each level of detail (0 full, 1 short, 2 outline)."""

    def __init__(
        self, index: int, raw: Mapping[str, Any], cell: dict[str, Any], options: NotebookOptions
    ) -> None:
        self.index = index
        self.raw = raw
        self.cell = cell
        self.options = options
        self.stubs: dict[int, list[str]] = {0: [], 1: [], 2: []}
        self.texts = [self._full(), self._short(), self._outline()]

    def _title(self) -> str:
        cell = self.cell
        count = cell["execution_count"]
        ran = f" In[{count}]" if count is not None else ""
        return f"[{self.index}] {cell['cell_type']} id={cell['id'] or '?'}{ran}"

    def _call(self, n: int) -> str:
        return f"nb.output({json.dumps(self.cell['id'] or '?')}, {n})"

    def _source_call(self) -> str:
        return f'nb.cells[{self.index}]["source"]'

    def _full(self) -> list[str]:
        lines = [self._title()]
        source = self.cell["source"]
        limit = self.options.source_chars
        if len(source) > limit:
            lines.extend(_indent(source[: limit // 2].rstrip("\n"), "  "))
            lines.append(
                f"  … <source: {size_text(len(source))}; the whole is {self._source_call()}>"
            )
            self.stubs[0].append(self._source_call())
        elif source:
            lines.extend(_indent(source, "  "))
        outputs = self.cell["outputs"]
        raws = [o for o in self.raw.get("outputs") or () if isinstance(o, Mapping)]
        for n, text in enumerate(outputs[:_OUTPUTS_SHOWN], start=1):
            raw = raws[n - 1] if n - 1 < len(raws) else {}
            lines.extend(self._output(n, text, raw))
        if len(outputs) > _OUTPUTS_SHOWN:
            more = len(outputs) - _OUTPUTS_SHOWN
            lines.append(f"  … {more} more outputs: {self._call(_OUTPUTS_SHOWN + 1)} ...")
        return lines

    def _output(self, n: int, text: str, raw: Mapping[str, Any]) -> list[str]:
        label = f"  [out {n}]"
        if raw.get("output_type") == "error":
            ename, evalue = str(raw.get("ename", "")), str(raw.get("evalue", ""))
            lines = [f"{label} error: {ename}: {evalue[: self.options.output_chars]}"]
            tb = compact_traceback(
                [_text(t) for t in raw.get("traceback") or ()], ename=ename, evalue=evalue
            )
            lines.extend(_indent(tb, "    ") if tb else [])
            return lines
        kind = "" if raw.get("output_type") == "stream" else f" {raw.get('output_type', '')}"
        if len(text) > self.options.output_chars or CUT_MARK in text:
            call = self._call(n)
            self.stubs[0].append(call)
            head = _preview(text, max(40, self.options.output_chars // 8))
            return [
                f"{label}{kind} <stub: {size_text(len(text))}; head: {head}; get it whole "
                f"with {call}>"
            ]
        if "\n" not in text.rstrip("\n"):
            return [f"{label}{kind} {text.rstrip(chr(10))}"]
        return [f"{label}{kind}", *_indent(text.rstrip("\n"), "    ")]

    def _short(self) -> list[str]:
        source = self.cell["source"]
        src_lines = source.split("\n")
        head = "\n".join(src_lines[:_HEAD_LINES])[:240]
        lines = [self._title(), *_indent(head, "  ")] if source else [self._title()]
        if len(head) < len(source):
            lines.append(
                f"  … ({len(src_lines)} lines, {len(source):,} chars: {self._source_call()})"
            )
            self.stubs[1].append(self._source_call())
        for n, text in enumerate(self.cell["outputs"], start=1):
            if n > _OUTPUTS_SHOWN:
                lines.append(f"  … {len(self.cell['outputs']) - _OUTPUTS_SHOWN} more outputs")
                break
            first = text.split("\n", 1)[0][:100]
            lines.append(f"  [out {n}] {len(text):,} chars: {first}")
        return lines

    def _outline(self) -> list[str]:
        source = self.cell["source"]
        first = source.split("\n", 1)[0][:80]
        lines = source.count("\n") + 1 if source else 0
        outs = len(self.cell["outputs"])
        return [f"{self._title()}: {first!r} ({lines} lines, {outs} outputs)"]

    def size(self, level: int) -> int:
        return sum(len(ln) + 1 for ln in self.texts[level])


def _focus(cells: Sequence[dict[str, Any]], focus: str | int | None) -> tuple[int, bool]:
    """The index the digest centres on, and whether it is the person's cell."""
    for i, cell in enumerate(cells):
        if isinstance(focus, str) and cell["id"] == focus:
            return i, True
    if isinstance(focus, int) and not isinstance(focus, bool) and 0 <= focus < len(cells):
        return focus, True
    ran = [(c["execution_count"], i) for i, c in enumerate(cells) if c["execution_count"]]
    return (max(ran)[1] if ran else 0), False


def read_cells(
    path: str,
    cells: Sequence[Mapping[str, Any]],
    options: NotebookOptions | None = None,
    *,
    focus: str | int | None = None,
) -> NotebookRead:
    """The bounded cells and the digest of a notebook's ``cells`` (see the module doc).

    ``focus``: the person's cell (its id, or its index), kept whole longest.
    """
    options = options or NotebookOptions()
    bounded, cut = _bounded_cells(cells, options)
    revision = revision_of(cells)
    kinds: dict[str, int] = {}
    for cell in bounded:
        kinds[cell["cell_type"]] = kinds.get(cell["cell_type"], 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda k: -k[1]))
    header = [
        f"Notebook {path} ({len(bounded)} cells{': ' + summary if summary else ''}; "
        f"revision {revision})",
        "nb is what notebook.read() returned: nb.cells[i], nb.output(cell_id, n)",
    ]
    if not bounded:
        header.append("(no cells)")
    at, person = _focus(bounded, focus)
    renders = [
        _Render(i, raw, c, options) for i, (raw, c) in enumerate(zip(cells, bounded, strict=True))
    ]
    if person:
        renders[at].texts = [[t[0] + "  <- the person's cell", *t[1:]] for t in renders[at].texts]
    budget = chars_for_tokens(min(max(options.budget_tokens, 200), MAX_BUDGET_TOKENS))
    levels = [0] * len(renders)
    hidden = [False] * len(renders)
    total = sum(len(h) + 1 for h in header) + sum(r.size(0) for r in renders)
    # Farthest from the focus first; the focus itself only once all others are hidden.
    order = sorted((i for i in range(len(renders)) if i != at), key=lambda i: (-abs(i - at), -i))
    for level in (1, 2):
        for i in order:
            if total <= budget:
                break
            total += renders[i].size(level) - renders[i].size(levels[i])
            levels[i] = level
    if total > budget:
        # Outlines of every cell do not fit: leave the farthest out, down to a quarter
        # under the budget, then give the room back to the nearest ones, nearest first.
        for i in order:
            if total <= budget * 3 // 4:
                break
            before = i > 0 and hidden[i - 1]
            after = i + 1 < len(hidden) and hidden[i + 1]
            hidden[i] = True
            gaps = -1 if before and after else (0 if before or after else 1)
            total += gaps * _GAP_CHARS - renders[i].size(levels[i])
        for level in (1, 0):
            for i in reversed(order):
                if hidden[i]:
                    continue
                grown = total + renders[i].size(level) - renders[i].size(levels[i])
                if grown > budget:
                    break
                total, levels[i] = grown, min(levels[i], level)
    for level in (1, 2):
        if renders and total > budget:
            total += renders[at].size(level) - renders[at].size(levels[at])
            levels[at] = level
    lines = list(header)
    stubbed: list[str] = []
    i = 0
    while i < len(renders):
        if hidden[i]:
            j = i
            while j + 1 < len(renders) and hidden[j + 1]:
                j += 1
            count = j - i + 1
            lines.append(
                f"[{i}]…[{j}] {count} cell{'s' if count > 1 else ''} not shown "
                f"(digest budget used): nb.cells[{i}:{j + 1}]"
            )
            i = j + 1
            continue
        lines.extend(renders[i].texts[levels[i]])
        stubbed.extend(renders[i].stubs[levels[i]])
        i += 1
    text = normalize_paths("\n".join(lines), env_prefix=options.env_prefix, home=options.home)
    return NotebookRead(
        path=path,
        revision=revision,
        cells=bounded,
        text=text,
        tokens=count_tokens(text),
        stubbed=tuple(stubbed),
        cut=cut,
    )
