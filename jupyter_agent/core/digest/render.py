"""The digest: what the model reads of a cell (or a bash command) in its ToolResult.

Layout of a cell digest (sections appear only when they have something to say)::

    Cell c3 (In[3], 0.12s)
    Output:
    [1] first printed value
    [2]
      a multi-line value,
      indented under its number
    Last value (DataFrame; also text/html table):
      ...repr...
    [display 1] image/png 640x480 (attached as image 1)
    Stderr:
      ...
    Side effects: chat.post ×3, llm.chat ×4
    #14 chat.post (mutation)
    #17 llm.chat failed: <error>
    hint: 4 sequential llm.chat calls; fan them out in one round trip with batch(...)
    Error: NameError: name 'x' is not defined
    <compact traceback>

Contract:

- Printed values are numbered from 1, the index ``values.get(cell_id, i)`` takes; the last
  value is ``values.get(cell_id, "last")``. "(no output)" when the cell showed nothing.
- A value whose full length (``Value.chars``) is over ``value_budget_tokens``, or whose text
  the kernel cut, becomes a stub: its size, a head (and, when known, tail) preview and the
  exact call that returns it whole in a later cell. Never an instruction to re-run.
- The whole text stays within about ``total_budget_tokens``: the last value is placed first,
  then the printed values. When they do not all fit, at most two values' budget of them is
  shown, from the start and from the end; the ones in between collapse into one stub naming
  the calls that return them. ``Digest.stubbed`` lists every call named.
- Side effects: ``name ×count`` in order of first call; mutations and failures one per line
  by ``#seq``; four or more consecutive calls of one ``app.method`` outside a ``batch``
  earn a hint. Calls made by one ``batch(...)`` share ``AppCallRecord.batch``.
- Errors set ``is_error`` and show ``Error: ename: evalue`` plus the compact traceback
  (:mod:`jupyter_agent.core.digest.tracebacks`); output printed before the error is still shown.
- Images (PNG/JPEG, in displays or the last value): with ``vision`` the first
  ``max_images`` become File parts after the text; otherwise the text says the model cannot
  see them. Sizes come from the image header.
- A last value whose mime bundle holds ``DIGEST_MIME`` (``notebook.read()``'s view, see
  :mod:`jupyter_agent.core.notebook.digest`) is a digest budgeted already: shown whole
  unless the kernel cut it.
- Paths under ``env_prefix`` read ``<env>``, under ``home`` read ``~``, everywhere.
- Deterministic and pure: the same result and options give the same digest, byte for byte.
  Work is bounded by the budgets (and the number of values), never by the size of a value.
"""  # noqa: RUF002 (the seed writes the multiplication sign)

from __future__ import annotations

import json
from dataclasses import dataclass

from jupyter_agent.core.digest.cells import BashResult, CellResult, LastValue, Value
from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.digest.parts import (
    DIGEST_MIME,
    Image,
    Rendered,
    block,
    collect_images,
    display_lines,
    side_effect_lines,
    size_text,
    stub,
)
from jupyter_agent.core.digest.tracebacks import compact_traceback
from jupyter_agent.core.paths import normalize_paths
from jupyter_agent.core.tokens import chars_for_tokens, count_tokens
from jupyter_agent.messages import File, Text

__all__ = ["Digest", "DigestOptions", "digest_bash", "digest_cell"]


@dataclass(frozen=True, kw_only=True)
class Digest:
    """A rendered digest: ``content`` is the ToolResult content (text first, then images)."""

    content: tuple[Text | File, ...]
    is_error: bool
    stubbed: tuple[str, ...]
    tokens: int

    @property
    def text(self) -> str:
        """The digest text (the first part)."""
        first = self.content[0]
        assert isinstance(first, Text)
        return first.text


_DEFAULT = DigestOptions()
# The stub for the values between the kept head and tail is about this long.
_RANGE_STUB_CHARS = 200


def _duration(seconds: float) -> str:
    if seconds >= 60:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes}m{rest:02d}s"
    return f"{seconds:.1f}s" if seconds >= 10 else f"{seconds:.2f}s"


def _print_text(value: Value) -> str:
    # print() ends with a newline; the digest's numbering already separates values.
    return value.text[:-1] if value.text.endswith("\n") else value.text


class _Budget:
    """The value renderings of one digest and the stubs they name."""

    def __init__(self, options: DigestOptions) -> None:
        self.value_chars = chars_for_tokens(options.value_budget_tokens)
        self.head = max(40, self.value_chars // 8)
        self.tail = max(20, self.value_chars // 16)
        self.stubbed: list[str] = []

    def fits(self, value: Value) -> bool:
        return not value.truncated and value.chars <= self.value_chars

    def value(self, label: str, value: Value, text: str, call: str) -> Rendered:
        """The full value if it is within the per-value budget, else its stub."""
        if self.fits(value):
            return Rendered(block(label, text), ())
        return Rendered(f"{label} {stub(value, call, self.head, self.tail)}", (call,))

    def over_total(self, label: str, value: Value, call: str) -> Rendered:
        """A stub for a value that no longer fits the digest's total budget."""
        body = stub(value, call, self.head // 2, 0, note="digest budget used")
        return Rendered(f"{label} {body}", (call,))


def _place_prints(result: CellResult, cell: str, budget: _Budget, room: int) -> list[Rendered]:
    """Printed values within ``room`` characters: head and tail kept, the middle stubbed.

    Values the kernel left out of the result (``prints_omitted``) always fall in the stub.
    """
    prints = result.prints

    def item_at(index: int) -> Rendered:
        n = result.print_number(index)
        value = prints[index]
        return budget.value(f"[{n}]", value, _print_text(value), f"values.get({cell}, {n})")

    rendered: list[Rendered] = []
    used = 0
    for index in range(len(prints)):
        item = item_at(index)
        used += len(item.text) + 1
        if used > room:
            break
        rendered.append(item)
    else:
        if result.prints_omitted is None:
            return rendered
    # Not everything fits: a long run of prints is mostly a loop's progress, so show at
    # most two values' budget of it: two thirds for the first values, the rest for the last
    # ones (a loop's end is often its answer), one stub for what lies between.
    room = min(room, 2 * budget.value_chars) - _RANGE_STUB_CHARS
    head: list[Rendered] = []
    used = 0
    gap = result.prints_omitted
    for item in rendered[: gap.first - 1] if gap is not None else rendered:
        if used + len(item.text) + 1 > room * 2 // 3:
            break
        head.append(item)
        used += len(item.text) + 1
    tail: list[Rendered] = []
    for index in range(len(prints) - 1, len(head) - 1, -1):
        item = item_at(index)
        if used + len(item.text) + 1 > room:
            break
        tail.append(item)
        used += len(item.text) + 1
    tail.reverse()
    # The numbers between the head and the tail, and the kept values among them.
    first = result.print_number(len(head) - 1) + 1 if head else 1
    last = result.print_number(len(prints) - len(tail)) - 1 if tail else result.prints_total
    between = prints[len(head) : len(prints) - len(tail)]
    if first > last:  # cannot happen while head + tail < the first pass; kept for safety
        return [*head, *tail]
    if first == last and len(between) == 1:
        middle = budget.over_total(f"[{first}]", between[0], f"values.get({cell}, {first})")
    else:
        count = last - first + 1
        chars = sum(v.chars for v in between)
        if gap is not None and first <= gap.first <= last:
            chars += gap.chars
        call = f"[values.get({cell}, i) for i in range({first}, {last + 1})]"
        middle = Rendered(
            f"[{first}]…[{last}] <stub: {count:,} more values, {size_text(chars)}, "
            f"digest budget used; get them with {call}>",
            (call,),
        )
    return [*head, middle, *tail]


def _last_label(last: LastValue, images: list[Image]) -> str:
    extras = []
    html = last.mime.get("text/html")
    if isinstance(html, str):
        extras.append("also text/html table" if "<table" in html else "also text/html")
    extras.extend(img.describe() for img in images if img.source == "last")
    if last.type_name:
        extras.insert(0, last.type_name)
    return f"Last value ({'; '.join(extras)}):" if extras else "Last value:"


def digest_cell(result: CellResult, options: DigestOptions = _DEFAULT) -> Digest:
    """Render one cell's result for the model (see the module docstring)."""
    budget = _Budget(options)
    cell = json.dumps(result.cell_id)
    images = collect_images(result, options)
    count = f"In[{result.execution_count}], " if result.execution_count is not None else ""
    failed = " failed" if result.error is not None else ""
    header = f"Cell {result.cell_id}{failed} ({count}{_duration(result.duration_s)})"

    # Sections that are always shown whole (each bounded on its own) are laid out first;
    # the values share what is left of the total budget.
    after: list[str] = []
    displays = display_lines(result.displays, images, budget.value_chars, options)
    if result.stderr is not None and result.stderr.text.strip():
        err = result.stderr
        shown = err.text if budget.fits(err) else stub(err, "", budget.head, budget.tail)
        after.append(block("Stderr:", shown.rstrip("\n")))
    after.extend(side_effect_lines(result.app_calls))
    if result.error is not None:
        e = result.error
        evalue = e.evalue
        if len(evalue) > budget.value_chars:
            evalue = evalue[: budget.value_chars] + f"… ({len(e.evalue):,} chars in all)"
        after.append(f"Error: {e.ename}: {evalue}" if evalue else f"Error: {e.ename}")
        tb = compact_traceback(e.traceback, ename=e.ename, evalue=e.evalue)
        if tb:
            after.append(tb)
    if result.outputs_truncated:
        after.append("Note: the kernel cut this cell's outputs (more than it keeps).")

    room = chars_for_tokens(options.total_budget_tokens) - len(header) - 10
    room -= sum(len(s) + 1 for s in (*displays, *after))
    items: list[Rendered] = []
    last_item: Rendered | None = None
    if result.last is not None:
        label = _last_label(result.last, images)
        call = f"values.get({cell}, {json.dumps('last')})"
        if DIGEST_MIME in result.last.mime and not result.last.repr.truncated:
            # notebook.read()'s view: a digest budgeted by its producer, never stubbed
            last_item = Rendered(block(label, result.last.repr.text), ())
        else:
            last_item = budget.value(label, result.last.repr, result.last.repr.text, call)
            if len(last_item.text) > room:
                last_item = budget.over_total(label, result.last.repr, call)
        room -= len(last_item.text) + 1
    if result.prints:
        items.extend(_place_prints(result, cell, budget, max(room, 0)))
    if last_item is not None:
        items.append(last_item)

    lines = [header]
    if items or displays:
        lines.append("Output:")
        lines.extend(item.text for item in items)
        lines.extend(displays)
    elif result.error is None and not after:
        lines.append("Output: (no output)")
    elif result.error is not None or result.stderr is not None:
        lines.append("Output: (none)")
    lines.extend(after)
    for item in items:
        budget.stubbed.extend(item.calls)
    return _finish(lines, options, result.error is not None, budget.stubbed, images)


def _finish(
    lines: list[str],
    options: DigestOptions,
    is_error: bool,
    stubbed: list[str],
    images: list[Image],
) -> Digest:
    text = normalize_paths("\n".join(lines), env_prefix=options.env_prefix, home=options.home)
    files = tuple(img.file for img in images if img.file is not None)
    return Digest(
        content=(Text(text=text), *files),
        is_error=is_error,
        stubbed=tuple(stubbed),
        tokens=count_tokens(text),
    )


def digest_bash(result: BashResult, options: DigestOptions = _DEFAULT) -> Digest:
    """Render one bash command's result: ``$ command``, exit status, stdout, stderr.

    ``is_error`` is true for a non-zero exit code or a timeout. Output over the per-value
    budget is stubbed with a pointer to ``sh.last.stdout`` / ``sh.last.stderr``, which the
    next bash call replaces (the stub says so).
    """
    budget = _Budget(options)
    command = result.command.strip()
    first_line, _, rest = command.partition("\n")
    if len(first_line) > 200:
        first_line = first_line[:200] + "…"
    if rest:
        first_line += f"  … (+{rest.count(chr(10)) + 1} lines)"
    lines = [f"$ {first_line}"]
    if result.timed_out:
        status = "timed out (killed)"
    elif result.returncode is None:
        status = "no exit code"
    else:
        status = f"exit {result.returncode}"
    lines.append(f"{status} ({_duration(result.duration_s)})")
    room = chars_for_tokens(options.total_budget_tokens) - sum(len(s) + 1 for s in lines)
    shown = 0
    for name, value in (("stdout", result.stdout), ("stderr", result.stderr)):
        if not value.text.strip() and not value.truncated:
            continue
        shown += 1
        call = f"sh.last.{name} (the next bash call replaces sh.last: save it first)"
        text = value.text[:-1] if value.text.endswith("\n") else value.text
        item = budget.value(f"{name}:", value, text, call)
        if len(item.text) > room:
            item = budget.over_total(f"{name}:", value, call)
        room -= len(item.text) + 1
        lines.append(item.text)
        budget.stubbed.extend(f"sh.last.{name}" for _ in item.calls)
    if not shown:
        lines.append("(no output)")
    is_error = result.timed_out or result.returncode != 0
    return _finish(lines, options, is_error, budget.stubbed, [])
