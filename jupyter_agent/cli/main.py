"""``jupyter agent <verb> ...`` (also the ``jupyter-agent`` console script).

Each verb is registered by one small function ``_add_<verb>(subparsers)`` listed in
:data:`VERBS`; it adds its sub-parser and sets ``handler`` (``args -> exit code``) with
``parser.set_defaults(handler=...)``. Adding a verb is writing one such function (and its
handler) and appending it to :data:`VERBS`. Verbs that talk to a server should call
:func:`~jupyter_agent.cli.options.add_server_options` to get ``--addr`` and ``--token``
(:mod:`jupyter_agent.cli.options` holds what the verbs share; they never import this module).

Verbs here: ``kernel install [--user | --sys-prefix | --prefix P] [--name NAME]``; the
trace verbs (``trace ls|show|prune``, ``replay``, ``export``) live in
:mod:`jupyter_agent.cli.trace`, the memory verbs (``memory ls|search|add|edit|rm|export``)
in :mod:`jupyter_agent.cli.memory`, the program verbs (``program deploy|ls|show|rollback``)
in :mod:`jupyter_agent.cli.program`, ``rerun`` in :mod:`jupyter_agent.cli.rerun` and
``import`` (a chat from an exported notebook) in :mod:`jupyter_agent.cli.import_chat`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from importlib.resources import as_file, files

from jupyter_agent.cli.diff import add_diff
from jupyter_agent.cli.evaluate import add_eval
from jupyter_agent.cli.import_chat import add_import
from jupyter_agent.cli.memory import add_memory
from jupyter_agent.cli.options import Subparsers, add_server_options
from jupyter_agent.cli.program import add_program
from jupyter_agent.cli.rerun import add_rerun
from jupyter_agent.cli.trace import add_export, add_replay, add_trace

__all__ = ["VERBS", "add_server_options", "build_parser", "install_kernelspec", "main"]

KERNEL_NAME = "jupyter-agent"


def install_kernelspec(
    *,
    user: bool = False,
    prefix: str | None = None,
    kernel_name: str = KERNEL_NAME,
) -> str:
    """Install the ``jupyter-agent`` kernelspec; returns the folder it was installed to.

    ``user`` installs into the user's Jupyter data dir, ``prefix`` under
    ``PREFIX/share/jupyter/kernels``; with neither, the system-wide location.
    """
    from jupyter_client.kernelspec import KernelSpecManager

    resources = files("jupyter_agent.kernel") / "resources"
    with as_file(resources) as source:
        path: str = KernelSpecManager().install_kernel_spec(
            str(source), kernel_name=kernel_name, user=user, prefix=prefix
        )
    return path


def _kernel_install(args: argparse.Namespace) -> int:
    prefix = sys.prefix if args.sys_prefix else args.prefix
    path = install_kernelspec(user=args.user, prefix=prefix, kernel_name=args.name)
    print(f"Installed kernelspec {args.name} in {path}")
    return 0


def _add_kernel(subparsers: Subparsers) -> None:
    kernel = subparsers.add_parser("kernel", help="the agent kernel")
    verbs = kernel.add_subparsers(dest="kernel_verb", required=True, metavar="{install}")
    install = verbs.add_parser("install", help="install the jupyter-agent kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="into the user's Jupyter data dir")
    where.add_argument(
        "--sys-prefix", action="store_true", help="into this Python environment (sys.prefix)"
    )
    where.add_argument("--prefix", default=None, help="under PREFIX/share/jupyter/kernels")
    install.add_argument("--name", default=KERNEL_NAME, help="the kernelspec name")
    install.set_defaults(handler=_kernel_install)


VERBS: list[Callable[[Subparsers], None]] = [
    _add_kernel,
    partial(add_trace, more=(add_diff,)),
    add_replay,
    add_export,
    add_memory,
    add_program,
    add_rerun,
    add_eval,
    add_import,
]


def build_parser() -> argparse.ArgumentParser:
    """The whole ``jupyter agent`` parser, one sub-parser per registered verb."""
    parser = argparse.ArgumentParser(
        prog="jupyter agent", description="jupyter-agent: command line tools"
    )
    subparsers = parser.add_subparsers(dest="verb", required=True)
    for add_verb in VERBS:
        add_verb(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``jupyter agent`` / ``jupyter-agent``; returns the exit code."""
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
