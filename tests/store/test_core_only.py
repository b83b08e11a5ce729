"""The store is SQLAlchemy Core: opening a Store and using it never imports SQLAlchemy's
ORM or SQLModel (about 0.13 s of the server's start), checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
import jupyter_agent.server.app
from jupyter_agent.store import Store
store = Store(sys.argv[1])
store.create_chat(chat_id="chat_1", title="t", now="2024-01-01T00:00:00.000Z")
store.rename_chat("chat_1", "u", now="2024-01-01T00:00:01.000Z")
store.fork_chat("chat_1", upto=0, chat_id="chat_2", title="f", now="2024", make_id=str)
store.list_chats(), store.chat_marked("chat_1"), store.recall("t"), store.list_runs()
store.delete_chat("chat_2")
store.close()
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[:2] == ["sqlalchemy", "orm"]
                        or m.split(".")[0] == "sqlmodel")))
"""


def test_the_store_never_imports_the_orm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, url], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
