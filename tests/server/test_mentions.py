"""``@`` mentions (issue 29, item 5) through a real Jupyter Server: ``GET agent/variables``
lists the variables of the kernel of the person's notebook (a real notebook session), and a
message whose view mentions a cell and a variable reaches the model with them listed.

Bad input: a notebook with no kernel (404 ``no_kernel``), a path out of the root, a busy
kernel (409 ``kernel_busy`` at once), malformed mentions (400 ``bad_view``, nothing sent).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, refused, wait_turn
from tests.server.test_person_kernel import PATH, Person

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("server_kernelspec")]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Seen."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


@pytest.fixture
def person(fetch: Any, jp_asyncio_loop: Any, jp_serverapp: Any, jp_root_dir: Path) -> Any:
    person = Person(fetch, jp_asyncio_loop, jp_serverapp, jp_root_dir)
    person.execute(
        "import pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\n"
        "threshold = 0.5\n"
    )
    yield person
    person.close()


def test_variables_of_the_notebooks_kernel(fetch: Any, person: Person) -> None:
    code, found = call(fetch, "agent", "variables", params={"path": PATH})
    assert code == 200
    assert found["path"] == PATH
    by_name = {v["name"]: v for v in found["variables"]}
    assert set(by_name) >= {"df", "threshold"}
    assert by_name["df"]["summary"].startswith("DataFrame 3 x 2")
    assert by_name["threshold"]["type"] == "float"


def test_no_kernel_a_bad_path_and_a_busy_kernel_are_refused(
    fetch: Any, person: Person, jp_root_dir: Path
) -> None:
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "work" / "other.ipynb")
    error = refused(fetch, "agent", "variables", params={"path": "work/other.ipynb"}, status=404)
    assert error["reason"] == "no_kernel"
    assert "no kernel is attached to work/other.ipynb" in error["message"]
    refused(fetch, "agent", "variables", params={"path": "../x.ipynb"}, status=400)
    person.execute("import time; time.sleep(20)", wait=False)
    time.sleep(1.0)
    started = time.monotonic()
    error = refused(fetch, "agent", "variables", params={"path": PATH}, status=409)
    assert error["reason"] == "kernel_busy"
    assert time.monotonic() - started < 3


def test_a_message_with_mentions_reaches_the_model(fetch: Any, spin: Any, fake: Any) -> None:
    chat_id = new_chat(fetch)
    view = {
        "path": PATH,
        "mentions": [
            {"kind": "cell", "cell": 2, "cell_id": "c2"},
            {"kind": "variable", "name": "df", "summary": "DataFrame 3 x 2 (a: int64, b: object)"},
            {"kind": "cell", "cell": 0, "cell_id": "o0", "path": "work/other.ipynb"},
        ],
    }
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST",
        body={"text": "compare @cell:2 with @df", "view": view},
    )  # fmt: skip
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    prompt = json.dumps(fake.requests[-1].json["messages"])
    assert "Mentioned:" in prompt
    assert f"- cell 2 (id `c2`) of `{PATH}`" in prompt
    assert "- cell 0 (id `o0`) of `work/other.ipynb`" in prompt  # its own notebook
    assert "- `df`, a variable of the person's kernel: DataFrame 3 x 2" in prompt


def test_a_mentioned_cell_out_of_the_root_is_refused(fetch: Any, fake: Any) -> None:
    chat_id = new_chat(fetch)
    error = refused(
        fetch, "agent", "chats", chat_id, "messages", method="POST",
        body={"text": "hi", "view": {"mentions": [
            {"kind": "cell", "cell": 1, "path": "../outside.ipynb"}
        ]}}, status=400,
    )  # fmt: skip
    assert error["reason"] == "bad_path"
    assert "view.mentions.path" in error["message"]


@pytest.mark.parametrize(
    "mentions",
    [
        [{"kind": "file", "path": "a.csv"}],
        [{"kind": "variable", "name": "not a name"}],
        [{"kind": "cell"}],
        [{"kind": "variable", "name": "df", "extra": 1}],
        [{"kind": "cell", "cell": 1}] * 21,
        [{"kind": "cell", "cell": 1, "path": 7}],
        "df",
    ],
)
def test_malformed_mentions_are_refused(fetch: Any, fake: Any, mentions: Any) -> None:
    chat_id = new_chat(fetch)
    before = len(fake.requests)
    error = refused(
        fetch, "agent", "chats", chat_id, "messages", method="POST",
        body={"text": "hi", "view": {"mentions": mentions}}, status=400,
    )  # fmt: skip
    assert error["reason"] == "bad_view"
    assert len(fake.requests) == before
