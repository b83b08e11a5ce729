"""Building blocks of the digest (:mod:`jupyter_agent.core.digest.render`): value blocks and stubs,
images (header sizes, File parts), display lines and the side-effects section.

Everything here is pure and bounded: a value's text is only ever sliced, never scanned
whole, so a 1 MB value costs no more than a small one.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from jupyter_agent.core.digest.cells import AppCallRecord, CellResult, Value
from jupyter_agent.core.tokens import CHARS_PER_TOKEN
from jupyter_agent.messages import File

if TYPE_CHECKING:
    from jupyter_agent.core.digest.options import DigestOptions

__all__ = [
    "DIGEST_MIME",
    "IMAGE_TYPES",
    "Image",
    "Rendered",
    "block",
    "collect_images",
    "display_lines",
    "image_size",
    "side_effect_lines",
    "size_text",
    "stub",
]

IMAGE_TYPES = ("image/png", "image/jpeg")
#: The mime type whose presence in a last value's bundle says "this repr is a notebook
#: digest, budgeted already": the cell digest shows it whole (the kernel's NotebookView,
#: :mod:`jupyter_agent.core.notebook.digest`).
DIGEST_MIME: Final = "application/vnd.jupyter-agent.notebook-digest+json"
BATCH_HINT_AT = 4
MAX_DISPLAYS = 20
MAX_DETAILS = 20
MAX_ERROR = 200
TIMES = "\u00d7"  # the seed's "name ×count"  # noqa: RUF003


class Rendered(NamedTuple):
    """One rendered value line (or block) and the ``values.get`` calls its stub names."""

    text: str
    calls: tuple[str, ...]


def size_text(chars: int) -> str:
    """``1,000 chars (~250 tokens)`` by the fixed token counter."""
    return f"{chars:,} chars (~{-(-chars // CHARS_PER_TOKEN):,} tokens)"


def _screen(line: str) -> str:
    # A carriage return rewrites the line on a terminal (progress bars): keep what stays.
    if "\r" in line:
        parts = [p for p in line.split("\r") if p]
        return parts[-1] if parts else ""
    return line


def block(label: str, text: str) -> str:
    """``label text`` for one line; else ``label`` then the lines indented by two spaces."""
    if "\n" not in text and "\r" not in text:
        return f"{label} {text}" if text else f"{label} (empty)"
    lines = [_screen(ln) for ln in text.split("\n")]
    if len(lines) == 1:
        return f"{label} {lines[0]}"
    return "\n".join([label, *(f"  {ln}" if ln else "" for ln in lines)])


def _quoted(text: str, *, cut_before: bool, cut_after: bool) -> str:
    # repr() keeps the preview on one line and unambiguous; "…" sits inside the quotes.
    r = repr(text)
    quote, inner = r[-1], r[1:-1]
    return f"{quote}{'…' if cut_before else ''}{inner}{'…' if cut_after else ''}{quote}"


def stub(value: Value, call: str, head: int, tail: int, note: str = "") -> str:
    """A value collapsed to its size, a head (and tail) preview and the call returning it."""
    parts = [f"stub: {size_text(value.chars)}" + (f", {note}" if note else "")]
    text = value.text
    if head > 0 and text:
        whole = not value.truncated and len(text) <= head
        parts.append("head: " + _quoted(text[:head], cut_before=False, cut_after=not whole))
        if tail > 0 and not value.truncated and len(text) > head + tail:
            parts.append("tail: " + _quoted(text[-tail:], cut_before=True, cut_after=False))
    if call:
        parts.append(f"get it whole with {call}")
    return "<" + "; ".join(parts) + ">"


# --- images ----------------------------------------------------------------------------


def _b64(data: Any, limit: int | None = None) -> bytes:
    if isinstance(data, list):  # nbformat may split long strings into lines
        data = "".join(str(x) for x in data)
    if not isinstance(data, str):
        return b""
    text = "".join(data[: limit * 2].split()) if limit else "".join(data.split())
    if limit:
        text = text[: limit - limit % 4]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return b""


def image_size(mime: str, head: bytes) -> tuple[int, int] | None:
    """(width, height) from the start of a PNG or JPEG file, or None if not found."""
    if mime == "image/png":
        if len(head) >= 24 and head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            w, h = struct.unpack(">II", head[16:24])
            return int(w), int(h)
        return None
    i = 2
    while head[:2] == b"\xff\xd8" and i + 9 < len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        (length,) = struct.unpack(">H", head[i + 2 : i + 4])
        # SOF0..SOF15 carry the size, except DHT (C4), JPG (C8) and DAC (CC).
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", head[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return None


@dataclass
class Image:
    """One image the cell produced: where it came from and what the digest says of it."""

    source: str  # "display" or "last"
    mime: str
    size: tuple[int, int] | None
    note: str
    file: File | None = None

    def describe(self) -> str:
        size = f" {self.size[0]}x{self.size[1]}" if self.size else ""
        return f"{self.mime}{size} ({self.note})"


def _bundle(display: dict[str, Any]) -> dict[str, Any]:
    # A mime bundle, or an nbformat display_data output that holds one under "data".
    data = display.get("data")
    return data if isinstance(data, dict) and "data" not in data else display


def collect_images(result: CellResult, options: DigestOptions) -> list[Image]:
    """The cell's PNG/JPEG images in order (displays, then the last value), File parts
    decoded for the first ``max_images`` when ``vision`` is on."""
    found: list[tuple[str, str, Any]] = []
    for display in result.displays:
        bundle = _bundle(display)
        found.extend(("display", m, bundle[m]) for m in IMAGE_TYPES if m in bundle)
    if result.last is not None:
        found.extend(("last", m, result.last.mime[m]) for m in IMAGE_TYPES if m in result.last.mime)
    images: list[Image] = []
    attached = 0
    for source, mime, data in found:
        if options.vision and attached < options.max_images:
            raw = _b64(data)
            size = image_size(mime, raw[:65536])
            if raw:
                attached += 1
                ext = "png" if mime == "image/png" else "jpg"
                file = File(media_type=mime, data=raw, name=f"image-{attached}.{ext}")
                images.append(Image(source, mime, size, f"attached as image {attached}", file))
            else:
                images.append(Image(source, mime, size, "unreadable image data"))
            continue
        size = image_size(mime, _b64(data, 44 if mime == "image/png" else 8192))
        note = (
            f"not attached: at most {options.max_images} images per cell"
            if options.vision
            else "an image; you cannot see images here"
        )
        images.append(Image(source, mime, size, note))
    return images


def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text):,} chars in all)"


_OBJECT_REPR = re.compile(r"^<[\w.]+ object( at 0x[0-9a-fA-F]+)?>$")


def _text_of(bundle: dict[str, Any]) -> tuple[str, Any]:
    """The display's text for the model: text/plain, unless it is only an object repr
    (``<IPython.core.display.Markdown object>``) and markdown or LaTeX source exists."""
    texts = {
        m: "".join(str(x) for x in v) if isinstance(v, list) else v
        for m in ("text/plain", "text/markdown", "text/latex")
        if isinstance(v := bundle.get(m), (str, list))
    }
    plain = texts.get("text/plain")
    if not isinstance(plain, str) or _OBJECT_REPR.match(plain.strip()):
        for mime in ("text/markdown", "text/latex"):
            if mime in texts:
                return mime, texts[mime]
    return "text/plain", plain


def display_lines(
    displays: Sequence[dict[str, Any]], images: list[Image], limit: int, options: DigestOptions
) -> list[str]:
    """One line (or block) per display: images with their note, text as text/plain."""
    shown_images = iter([img for img in images if img.source == "display"])
    lines: list[str] = []
    text_room = limit * 2
    for n, display in enumerate(displays, start=1):
        bundle = _bundle(display)
        label = f"[display {n}]"
        kinds = [next(shown_images).describe() for m in IMAGE_TYPES if m in bundle]
        html = bundle.get("text/html")
        if isinstance(html, str):
            kinds.append("text/html table" if "<table" in html else "text/html")
        kinds.extend(m for m in bundle if m not in (*IMAGE_TYPES, "text/html", "text/plain"))
        plain_type, plain = _text_of(bundle)
        if n > MAX_DISPLAYS:
            continue
        head = f"{label} {', '.join(kinds)}" if kinds else label
        if isinstance(plain, str) and plain:
            if "\n" not in plain and len(plain) <= 120:
                lines.append(f"{head} {plain}")
            elif text_room > 0:
                cut = _cut_text(plain, min(limit, text_room))
                text_room -= len(cut)
                lines.append(block(f"{head}, as {plain_type}:" if kinds else head, cut))
            else:
                lines.append(f"{head} ({plain_type} {len(plain):,} chars, not shown)")
        else:
            lines.append(head)
    if len(displays) > MAX_DISPLAYS:
        lines.append(f"… {len(displays) - MAX_DISPLAYS} more displays")
    return lines


# --- side effects ----------------------------------------------------------------------


def _one_line(text: str) -> str:
    first = " ".join(text.split())
    return first if len(first) <= MAX_ERROR else first[: MAX_ERROR - 1] + "…"


def side_effect_lines(calls: Sequence[AppCallRecord]) -> list[str]:
    """``Side effects: a.b ×n, ...``, then mutations and failures by ``#seq``, then hints."""  # noqa: RUF002
    if not calls:
        return []
    counts: dict[str, list[int]] = {}
    for c in calls:
        entry = counts.setdefault(c.name, [0, 0])
        entry[0] += 1
        entry[1] += c.batch is not None
    summary = ", ".join(
        f"{name} {TIMES}{n}" + (f" ({b} batched)" if b else "") for name, (n, b) in counts.items()
    )
    lines = [f"Side effects: {summary}"]
    details = [c for c in calls if c.mutation or not c.ok]
    for c in details[:MAX_DETAILS]:
        seq = f"#{c.seq}" if c.seq is not None else "#?"
        line = f"{seq} {c.name}" + (" (mutation)" if c.mutation else "")
        if not c.ok:
            line += f" failed: {_one_line(c.error or 'unknown error')}"
        lines.append(line)
    if len(details) > MAX_DETAILS:
        lines.append(f"… {len(details) - MAX_DETAILS} more mutations or failures")
    # The longest run of consecutive calls of one method outside any batch.
    longest: dict[str, int] = {}
    run_name, run = "", 0
    for c in calls:
        if c.batch is None and c.name == run_name:
            run += 1
        else:
            run_name, run = (c.name, 1) if c.batch is None else ("", 0)
        if run_name:
            longest[run_name] = max(longest.get(run_name, 0), run)
    for name, n in longest.items():
        if n >= BATCH_HINT_AT:
            lines.append(
                f"hint: {n} sequential {name} calls; "
                f"fan them out in one round trip with batch({name}.spec(...), ...)"
            )
    return lines
