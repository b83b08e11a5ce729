"""A Sphinx extension of the docs site: the pages generated from the code at build time.

A page holds a marker line where its generated part goes (``source-read`` puts it there):

- ``<!-- agent:configuration -->``: every configurable trait of the extension and its
  parts (:data:`CLASSES`), with its type, default, help, and the deprecated name that
  still sets it (``server/config_aliases.MOVED``);
- ``<!-- agent:cli -->``: every command of ``jupyter agent`` (the argparse parser of
  ``jupyter_agent.cli.main``), its usage and the help of each argument;
- ``<!-- agent:screenshots NAME ... -->``: the screenshots the browser tests took of the
  panel (``test-artifacts/browser/NAME.png``, copied into the build); one not taken yet
  (the browser tests did not run before this build) is named, not shown.

Only this folder's code generates; the package is imported, never changed.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from typing import Any

from traitlets import HasTraits, TraitType

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "browser"
_MARKER = re.compile(r"^<!-- agent:(\w+)(.*?)-->$", re.M)


def classes() -> list[type[HasTraits]]:
    """The configurables whose traits the configuration page lists (the app first)."""
    from jupyter_agent.llm.transport import Transport
    from jupyter_agent.runtime.events import EventBus
    from jupyter_agent.runtime.kernels.pool import KernelPool
    from jupyter_agent.runtime.runs.manager import RunManager
    from jupyter_agent.server.app import JupyterAgent

    return [JupyterAgent, KernelPool, RunManager, Transport, EventBus]


def own_traits(cls: type[HasTraits]) -> dict[str, TraitType[Any, Any]]:
    """The configurable traits this project defines on ``cls`` (not Jupyter Server's)."""
    traits = cls.class_traits(config=True)
    return {
        name: trait
        for name, trait in sorted(traits.items())
        if getattr(trait, "this_class", cls).__module__.startswith("jupyter_agent")
    }


def _default(trait: TraitType[Any, Any]) -> str:
    try:
        text = trait.default_value_repr()
    except Exception:  # a dynamic default
        text = "(computed at start)"
    return text if len(text) <= 120 else text[:117] + "..."


def configuration_md() -> str:
    """The configuration reference, as MyST Markdown."""
    from jupyter_agent.server.config_aliases import MOVED

    moved_to = {(section, new): old for old, (section, new) in MOVED.items()}
    out: list[str] = []
    for cls in classes():
        name = cls.__name__
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out += [f"## `{name}`", "", doc, ""]
        for trait_name, trait in own_traits(cls).items():
            out.append(f"### `{name}.{trait_name}`")
            out.append("")
            kind = type(trait).__name__
            out.append(f"*{kind}*, default `{_default(trait)}`")
            if name == "JupyterAgent" and trait_name in MOVED:
                section, new = MOVED[trait_name]
                out.append(f"(deprecated: it sets `{section}.{new}`, which wins when both are set)")
            old = moved_to.get((name, trait_name))
            if old:
                out.append(f"(also set by the deprecated `JupyterAgent.{old}`)")
            out += ["", (trait.help or "").strip() or "(no help)", ""]
    return "\n".join(out)


def _commands(
    parser: argparse.ArgumentParser, prefix: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(prefix, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{prefix} {name}")
    return found


def cli_md() -> str:
    """The CLI reference, as MyST Markdown (every command, its usage and arguments)."""
    from jupyter_agent.cli.main import build_parser

    out: list[str] = []
    for command, parser in _commands(build_parser(), "jupyter agent"):
        out += [f"## `{command}`", ""]
        if parser.description:
            out += [parser.description, ""]
        usage = parser.format_usage().strip().removeprefix("usage: ")
        out += ["```text", usage.replace(parser.prog, command, 1), "```", ""]
        rows = []
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            names = ", ".join(action.option_strings) or action.metavar or action.dest
            rows.append(f"- `{names}`: {(action.help or '').replace('%%', '%')}")
        out += [*rows, ""] if rows else []
    return "\n".join(out)


def screenshots_md(names: list[str], outdir: Path) -> str:
    """The screenshots ``names`` the browser tests took, copied beside the page's HTML."""
    out: list[str] = []
    for name in names:
        shot = SHOTS / f"{name}.png"
        title = name.replace("-", " ")
        if shot.is_file():
            target = outdir / "_images" / "screenshots" / shot.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, target)
            out += ["```{raw} html", f'<figure><img src="../_images/screenshots/{shot.name}"'
                    f' alt="{title}" style="max-width:100%"><figcaption>{title}</figcaption>'
                    "</figure>", "```", ""]  # fmt: skip
        else:
            out += [f"*{title}*: taken by the browser tests (`tests/browser`), shown once they "
                    "ran before this build.", ""]  # fmt: skip
    return "\n".join(out)


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    def fill(match: re.Match[str]) -> str:
        kind, args = match.group(1), match.group(2).split()
        if kind == "configuration":
            return configuration_md()
        if kind == "cli":
            return cli_md()
        if kind == "screenshots":
            return screenshots_md(args, Path(app.outdir))
        raise ValueError(f"{docname}: unknown generated part {kind!r}")

    source[0] = _MARKER.sub(fill, source[0])


def setup(app: Any) -> dict[str, Any]:
    """Register the generated parts."""
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
