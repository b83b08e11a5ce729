"""The shim that lends this package to another environment's kernel (``make_shim``)."""

from __future__ import annotations

import os
from pathlib import Path

import jupyter_agent
from jupyter_agent.runtime.environments.interpreters import make_shim

PACKAGE = Path(jupyter_agent.__file__).resolve().parent


def test_the_shim_links_this_package_and_is_idempotent(tmp_path: Path) -> None:
    shim = make_shim(tmp_path)
    assert os.path.realpath(shim / "jupyter_agent") == str(PACKAGE)
    assert make_shim(tmp_path) == shim
    assert sorted(p.name for p in shim.iterdir()) == ["jupyter_agent"]


def test_a_link_to_another_copy_is_replaced(tmp_path: Path) -> None:
    """A shim left by another checkout (or a dangling one) must not lend the wrong code."""
    other = tmp_path / "old-checkout" / "jupyter_agent"
    other.mkdir(parents=True)
    shim = tmp_path / "env" / "pkg"
    shim.mkdir(parents=True)
    (shim / "jupyter_agent").symlink_to(other, target_is_directory=True)
    make_shim(tmp_path / "env")
    assert os.path.realpath(shim / "jupyter_agent") == str(PACKAGE)
    (shim / "jupyter_agent").unlink()
    (shim / "jupyter_agent").symlink_to(tmp_path / "gone", target_is_directory=True)
    make_shim(tmp_path / "env")
    assert os.path.realpath(shim / "jupyter_agent") == str(PACKAGE)
    assert sorted(p.name for p in shim.iterdir()) == ["jupyter_agent"]
