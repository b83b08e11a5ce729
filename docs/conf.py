"""Sphinx configuration of jupyter-agent's documentation site (MyST Markdown, the PyData
theme). Built by the README's test command with warnings as errors::

    sphinx-build -W -b html docs build/docs

The configuration, CLI and screenshot pages are generated at build time from the code
(``docs/_ext/agent_reference.py``), so they cannot drift from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

import jupyter_agent  # noqa: E402

project = "jupyter-agent"
author = "The jupyter-agent contributors"
copyright = "2026, the jupyter-agent contributors"
release = jupyter_agent.__version__
version = release

extensions = ["myst_parser", "agent_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4

html_theme = "pydata_sphinx_theme"
html_title = f"jupyter-agent {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
