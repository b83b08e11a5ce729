"""One digest per cell: the options the loop digests with, and the digest the driver records.

The driver digests each cell or command once, with exactly the loop's options
(:func:`digest_options_from_config`, from the same ``config.get`` values the loop reads), and
puts the result in the ``cell.run`` / ``bash.run`` result it returns, under the key
:data:`DIGEST_KEY` (``{"text", "is_error"}``, beside the result's own keys); the same text
goes out in ``cell_end``. The loop reads the recorded digest back (:func:`recorded_content`)
and digests the result itself only when a log has none (logs written before this), so the
panel, the step and the model read the same text, and old logs replay as they were.

Images are not recorded twice: with ``vision`` the File parts after the text are taken from
the result's own images (:func:`~jupyter_agent.core.digest.parts.collect_images`), as the
digest does.

Pure: no I/O.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.digest.cells import CellResult
from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.digest.parts import collect_images
from jupyter_agent.core.digest.render import Digest
from jupyter_agent.messages import File, Text

__all__ = [
    "DIGEST_KEY",
    "digest_options",
    "digest_options_from_config",
    "digest_record",
    "recorded",
    "recorded_content",
]

#: The key of the recorded digest in a ``cell.run`` or ``bash.run`` result.
DIGEST_KEY: Final = "digest"


def digest_options(ceilings: Ceilings, spaces: Mapping[str, Any], *, vision: bool) -> DigestOptions:
    """The options a run digests with: its ceilings' budgets, its spaces' paths, the
    codegen tier's ``vision``."""
    return replace(DigestOptions.from_config(ceilings, spaces), vision=vision)


def _vision(get: Callable[[str], Any]) -> bool:
    tier = get("llm.tier.codegen")
    model = tier.get("model") if isinstance(tier, Mapping) else None
    if not isinstance(model, str) or not model:
        return False
    overrides = get(f"llm.profile.{model}")
    from jupyter_agent.llm.profiles import get_profile

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown model's warning is the loop's to give
            return get_profile(model, overrides if isinstance(overrides, Mapping) else None).vision
    except Exception:  # a bad override ends the run in the loop; a digest needs no vision
        return False


def digest_options_from_config(get: Callable[[str], Any]) -> DigestOptions:
    """:func:`digest_options` from ``config.get`` values (``get(key)``), as the loop reads
    them: ``ceilings``, ``spaces``, ``llm.tier.codegen`` and ``llm.profile.<model>``."""
    spaces = get("spaces")
    return digest_options(
        Ceilings.from_json(get("ceilings")),
        spaces if isinstance(spaces, Mapping) else {},
        vision=_vision(get),
    )


def digest_record(digest: Digest) -> dict[str, Any]:
    """What the driver records of a digest (the value of :data:`DIGEST_KEY`)."""
    return {"text": digest.text, "is_error": digest.is_error}


def recorded(data: Any) -> tuple[str, bool] | None:
    """(text, is_error) of a result's recorded digest, or None when it has none."""
    record = data.get(DIGEST_KEY) if isinstance(data, Mapping) else None
    if isinstance(record, Mapping) and isinstance(record.get("text"), str):
        return str(record["text"]), bool(record.get("is_error"))
    return None


def recorded_content(
    data: Any, cell: CellResult | None, options: DigestOptions
) -> tuple[tuple[Text | File, ...], bool] | None:
    """(ToolResult content, is_error) from a result's recorded digest, or None without one.

    ``cell`` is the python cell's result (its images follow the text, as in the digest);
    None for a bash command.
    """
    found = recorded(data)
    if found is None:
        return None
    text, is_error = found
    files: tuple[File, ...] = ()
    if cell is not None and options.vision:
        files = tuple(i.file for i in collect_images(cell, options) if i.file is not None)
    return (Text(text=text), *files), is_error
