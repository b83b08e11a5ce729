"""Where jupyter-agent keeps its files: one folder under the Jupyter data dir.

Layout (DESIGN section 3): ``{jupyter_data_dir}/jupyter_agent/`` holds ``agent.sqlite``
(the default database), ``runs/<run_id>.jsonl`` (effect logs) and ``spaces/`` (the user's
space). The server and the CLI resolve the same folder, so ``jupyter agent trace ls``
on the server's machine reads what the server wrote.

These helpers only compute paths: they never create a folder (the writer does, when it
first writes). They depend on ``jupyter_core`` only, so any layer may use them.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_core.paths import jupyter_data_dir

__all__ = ["DB_FILENAME", "agent_data_dir", "default_db_url", "runs_dir", "spaces_dir"]

#: The file name of the default SQLite database inside ``agent_data_dir()``.
DB_FILENAME = "agent.sqlite"


def agent_data_dir() -> Path:
    """Return ``{jupyter_data_dir()}/jupyter_agent``, honouring ``JUPYTER_DATA_DIR``.

    Resolved at each call, so a test or a server that changes the environment sees the
    new folder.
    """
    return Path(jupyter_data_dir()) / "jupyter_agent"


def runs_dir() -> Path:
    """Return the folder of the runs' effect logs (``runs/<run_id>.jsonl``)."""
    return agent_data_dir() / "runs"


def spaces_dir() -> Path:
    """Return the folder of the user's space (``spaces/``)."""
    return agent_data_dir() / "spaces"


def default_db_url() -> str:
    """Return the SQLAlchemy URL of the default database: the SQLite file in the data dir.

    An absolute POSIX path gives the four-slash form (``sqlite:////home/u/.../agent.sqlite``).
    """
    return f"sqlite:///{(agent_data_dir() / DB_FILENAME).as_posix()}"
