"""What runs in the person's kernel for a look (:mod:`jupyter_agent.kernel.look`), driven
as the host drives it: its source and one call in a ``user_expressions`` entry, evaluated
in a namespace like IPython's (no kernel here: ``tests/server/test_person_kernel.py`` has
the real one). The namespace keeps every name it had and gains none."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jupyter_agent.kernel import look

SOURCE = inspect.getsource(look)


def _ask(ns: dict[str, Any], fn: str, **args: Any) -> Any:
    before = dict(ns)
    answer = json.loads(eval(look.expression(SOURCE, fn, args), ns, ns))
    assert {k: v for k, v in ns.items() if k != "__builtins__"} == {
        k: v for k, v in before.items() if k != "__builtins__"
    }
    return answer


def _ns() -> dict[str, Any]:
    return {
        "df": pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]}),
        "img": np.zeros((3, 224, 224), dtype="float32"),
        "rows": [1, 2, 3, 4, 5],
        "text": "t" * 1_000_000,
        "pd": pd,
        "helper": lambda: 1,
        "Thing": type("Thing", (), {}),
        "_hidden": 1,
        "In": [""],
    }


def test_variables_name_types_and_shapes_and_skip_the_rest() -> None:
    found = _ask(_ns(), "variables", budget=6000)["ok"]
    summaries = {v["name"]: v["summary"] for v in found["variables"]}
    assert summaries == {
        "df": "DataFrame 3 x 2 (a: float64, b: " + summaries["df"].split("b: ", 1)[1],
        "img": "ndarray (3, 224, 224) float32",
        "rows": "list[5]",
        "text": "str of 1,000,000: '" + "t" * 76 + "...",
    }
    assert (found["total"], found["cut"]) == (4, 0)


def test_the_budget_cuts_and_names_what_it_left_out() -> None:
    ns = {f"v{i:03d}": i for i in range(500)}
    found = _ask(ns, "variables", budget=200)["ok"]
    assert 0 < len(found["variables"]) < 50
    assert found["cut"] == 500 - len(found["variables"])
    assert found["more"][0] == f"v{len(found['variables']):03d}"


def test_inspect_a_frame_and_a_missing_name() -> None:
    text = _ask(_ns(), "inspect_value", name="df")["ok"]["text"]
    assert "head():" in text
    assert "nulls per column:\na    1" in text
    assert "describe():" in text
    assert _ask(_ns(), "inspect_value", name="nope") == {
        "error": "KeyError: \"no variable 'nope' in the person's kernel\""
    }


def test_dump_within_the_cap_and_refused_past_it(tmp_path: Path) -> None:
    ns = {"df": pd.DataFrame({"a": range(1000)}), "big": bytes(2_000_000)}
    small = _ask(ns, "dump", name="df", path=str(tmp_path / "a"), cap=1_000_000)["ok"]
    assert small["bytes"] == (tmp_path / "a").stat().st_size
    assert pd.read_pickle(tmp_path / "a").equals(ns["df"])
    over = _ask(ns, "dump", name="big", path=str(tmp_path / "b"), cap=1_000_000)["ok"]
    assert over == {"type": "bytes", "bytes": None, "over": 1_000_000}
    assert (tmp_path / "b").stat().st_size <= 1_000_000  # never wrote past the cap
