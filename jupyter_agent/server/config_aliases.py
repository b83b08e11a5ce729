"""The old ``JupyterAgent.*`` names of settings that moved onto the parts they configure.

The kernel pool, the transport and the run manager are configurables of their own
(``c.KernelPool.size``, ``c.Transport.retry_after_cap_s``, ``c.RunManager.max_cells``).
Their settings used to be traits of the extension app; those names keep working:
:func:`parts_config` copies the value of each old name that was set (in a config file, on
the command line or on the app object) to its new name, unless the new name is set too (it
wins), and says which old names were used, so the app logs one deprecation line.

Pure traitlets: the app (``server/app.py``) owns the old traits and calls this.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from traitlets.config import Config

__all__ = ["MOVED", "deprecation_line", "parts_config"]

#: Old ``JupyterAgent`` trait -> (the class that now owns it, its name there).
MOVED: Mapping[str, tuple[str, str]] = {
    "pool_size": ("KernelPool", "size"),
    "kernel_env_keep": ("KernelPool", "env_keep"),
    "retry_after_cap_s": ("Transport", "retry_after_cap_s"),
    "max_model_calls": ("RunManager", "max_model_calls"),
    "max_cells": ("RunManager", "max_cells"),
    "max_wall_s": ("RunManager", "max_wall_s"),
    "max_cost_usd": ("RunManager", "max_cost_usd"),
    "cell_timeout_s": ("RunManager", "cell_timeout_s"),
    "model_deadline_s": ("RunManager", "model_deadline_s"),
    "bash_enabled": ("RunManager", "bash_enabled"),
}


def _is_set(config: Config, section: str, name: str) -> bool:
    # ``in`` on a Config, never attribute access: that would create the section.
    return section in config and name in config[section]


def parts_config(
    config: Config, *, app_section: str, old_values: Mapping[str, Any], defaults: Mapping[str, Any]
) -> tuple[Config, list[str]]:
    """``config`` with each old name that was set copied to its new name; and those names.

    An old name counts as set when ``config[app_section]`` holds it, or when its current
    value (``old_values``) differs from its default (set on the app object). It fills the
    new name only when ``config`` does not set that one: the new name wins. ``config`` is
    not changed (a copy is returned).
    """
    merged = copy.deepcopy(config)
    used: list[str] = []
    for old, (section, new) in MOVED.items():
        value = old_values[old]
        if not (_is_set(config, app_section, old) or value != defaults[old]):
            continue
        used.append(old)
        if not _is_set(config, section, new):
            merged[section][new] = copy.deepcopy(value)
    return merged, used


def deprecation_line(app_section: str, used: list[str]) -> str:
    """The one log line naming the old names in use and their new names."""
    moves = ", ".join(f"{app_section}.{old} -> {'.'.join(MOVED[old])}" for old in used)
    return (
        f"deprecated config names (they still work; when both are set the new name wins): {moves}"
    )
