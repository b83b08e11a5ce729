"""The pure proposal model: normalize, apply (all, some), conflicts, undo, never a lost cell."""

from __future__ import annotations

import copy
from typing import Any

import nbformat
import pytest

from jupyter_agent.core.notebook.edits import normalize_edits
from jupyter_agent.core.notebook.proposals import (
    Edit,
    apply_edits,
    edits_from_json,
    edits_json,
    seeded_ids,
    select_edits,
)
from jupyter_agent.exceptions import BadRequest, ProposalConflict


def _code(cell_id: str, source: str, *, outputs: bool = True) -> dict[str, Any]:
    out = [{"output_type": "stream", "name": "stdout", "text": f"{source}\n"}] if outputs else []
    return {
        "id": cell_id,
        "cell_type": "code",
        "metadata": {"tags": [cell_id]},
        "source": source,
        "outputs": out,
        "execution_count": 1 if outputs else None,
    }


def _cells() -> list[dict[str, Any]]:
    return [
        {"id": "intro", "cell_type": "markdown", "metadata": {}, "source": "# Title"},
        _code("load", "df = load()"),
        _code("plot", "df.plot()"),
        _code("tail", "df.tail()"),
    ]


def _ids(cells: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for c in cells]


def _norm(cells: list[dict[str, Any]], edits: list[dict[str, Any]]) -> list[Edit]:
    return normalize_edits(cells, edits, new_id=seeded_ids("run_1:7"))


def _valid(cells: list[dict[str, Any]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(c) for c in cells]
    nbformat.validate(nb)


def test_normalize_fills_ids_diffs_bases_deterministically() -> None:
    cells = _cells()
    raw = [
        {"op": "replace", "cell_id": "load", "source": "df = load(cache=True)", "reason": "cache"},
        {"op": "insert", "after": "load", "source": "df.info()", "reason": "look"},
        {"op": "delete", "cell_id": "tail", "reason": "unused"},
        {"op": "move", "cell_id": "plot", "after": None, "reason": "first"},
    ]
    edits = _norm(cells, raw)
    again = _norm(cells, raw)
    assert edits_json(edits) == edits_json(again)  # seeded: a replay makes the same ids
    replace, insert, delete, move = edits
    assert replace.old_source == "df = load()"
    assert replace.diff.startswith("--- cell load\n+++ cell load\n")
    assert "-df = load()\n+df = load(cache=True)\n" in replace.diff
    assert insert.cell_type == "code"
    assert len(insert.cell_id) == 8
    assert insert.after == "load"
    assert delete.old_source == "df.tail()"
    assert "-df.tail()" in delete.diff
    assert move.after is None
    assert move.diff == ""
    assert all(len(e.base) == 12 for e in edits)
    assert replace.base == insert.base != delete.base  # both cover cell 'load' as read
    assert edits_from_json(edits_json(edits)) == edits
    assert set(insert.to_json()) == {"op", "cell_id", "after", "cell_type", "source"} | {
        "reason",
        "diff",
        "base",
    }
    assert "after" not in replace.to_json()


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ({"op": "replace", "cell_id": "nope", "source": "x", "reason": "r"}, "'nope' is not"),
        ({"op": "move", "cell_id": "plot", "after": "plot", "reason": "r"}, "after itself"),
        ({"op": "delete", "cell_id": "plot"}, "'reason' must be a string"),
        ({"op": "delete", "cell_id": "plot", "reason": "  "}, "'reason' must say"),
        ({"op": "replace", "cell_id": "plot", "source": ["x"], "reason": "r"}, "'source' must"),
        (
            {"op": "insert", "after": None, "source": "x", "cell_type": "sql", "reason": "r"},
            "one of",
        ),
        ({"op": "rename", "cell_id": "plot", "reason": "r"}, "'op' must be one of"),
        ({"op": "delete", "cell_id": "plot", "source": "x", "reason": "r"}, "takes no 'source'"),
        ("delete it", "an edit is an object"),
    ],
)
def test_normalize_refuses_with_a_clear_message(edit: Any, words: str) -> None:
    with pytest.raises(BadRequest, match=words) as caught:
        _norm(_cells(), [edit])
    assert caught.value.reason == "bad_edits"
    assert caught.value.message.startswith("edit 0: ")


def test_normalize_refuses_a_deleted_cell_twice_and_an_empty_list() -> None:
    twice = [
        {"op": "delete", "cell_id": "plot", "reason": "r"},
        {"op": "move", "cell_id": "tail", "after": "plot", "reason": "r"},
    ]
    with pytest.raises(BadRequest, match="edit 1: 'after' 'plot' was deleted"):
        _norm(_cells(), twice)
    with pytest.raises(BadRequest, match="make it one"):
        _norm(
            _cells(),
            [
                {"op": "replace", "cell_id": "plot", "source": "a", "reason": "r"},
                {"op": "replace", "cell_id": "plot", "source": "b", "reason": "r"},
            ],
        )
    with pytest.raises(BadRequest, match="non-empty list"):
        _norm(_cells(), [])


def test_apply_all_then_undo_restores_every_cell_whole() -> None:
    cells = _cells()
    before = copy.deepcopy(cells)
    edits = _norm(
        cells,
        [
            {"op": "replace", "cell_id": "load", "source": "df = load(1)", "reason": "r"},
            {"op": "insert", "after": "load", "source": "a", "reason": "r"},
            {"op": "insert", "after": "load", "source": "b", "cell_type": "markdown"}
            | {"reason": "r"},
            {"op": "delete", "cell_id": "tail", "reason": "r"},
            {"op": "move", "cell_id": "intro", "after": "plot", "reason": "r"},
        ],
    )
    new, inverse = apply_edits(cells, edits)
    assert cells == before  # inputs untouched
    a, b = edits[1].cell_id, edits[2].cell_id
    assert _ids(new) == ["load", a, b, "plot", "intro"]  # consecutive inserts keep their order
    load = new[0]
    assert load["source"] == "df = load(1)"
    assert load["metadata"] == {"tags": ["load"]}
    assert load["outputs"] == []
    assert load["execution_count"] is None
    assert new[2]["cell_type"] == "markdown"
    assert "outputs" not in new[2]
    assert new[3] == before[2]  # untouched cells keep their outputs
    _valid(new)
    restored, again = apply_edits(new, inverse)
    assert restored == before  # the deleted cell comes back whole, outputs too
    assert [e.op for e in again] == ["replace", "insert", "insert", "delete", "move"]
    redone, _ = apply_edits(restored, again)  # the undo of the undo is the apply
    assert redone == new


def test_apply_some_skips_the_others_and_falls_back_to_the_anchor() -> None:
    cells = _cells()
    edits = _norm(
        cells,
        [
            {"op": "insert", "after": "plot", "source": "first", "reason": "r"},
            {"op": "insert", "after": "plot", "source": "second", "reason": "r"},
            {"op": "delete", "cell_id": "intro", "reason": "r"},
        ],
    )
    second = edits[1].cell_id
    chosen = select_edits(edits, [second])
    new, inverse = apply_edits(cells, chosen, all_edits=edits)
    assert _ids(new) == ["intro", "load", "plot", second, "tail"]
    restored, _ = apply_edits(new, inverse)
    assert restored == cells
    with pytest.raises(BadRequest, match="no edit of this proposal is for cell 'zzz'") as caught:
        select_edits(edits, ["zzz"])
    assert caught.value.reason == "bad_cells"


def test_a_changed_or_gone_cell_is_a_conflict_naming_it() -> None:
    cells = _cells()
    edits = _norm(
        cells,
        [
            {"op": "replace", "cell_id": "load", "source": "x", "reason": "r"},
            {"op": "move", "cell_id": "tail", "after": "intro", "reason": "r"},
        ],
    )
    changed = copy.deepcopy(cells)
    changed[1]["source"] = "df = load('other')"
    del changed[0]
    with pytest.raises(ProposalConflict) as caught:
        apply_edits(changed, edits)
    message = caught.value.message
    assert "cell 'load' changed" in message
    assert "cell 'intro' is gone" in message
    assert caught.value.reason == "proposal_conflict"
    # Outputs or metadata changing is not a conflict: the base is type + source.
    ran = copy.deepcopy(cells)
    ran[1]["outputs"] = []
    ran[1]["metadata"] = {"collapsed": True}
    new, _ = apply_edits(ran, edits)
    assert next(c for c in new if c["id"] == "load")["metadata"] == {"collapsed": True}


def test_undo_after_a_later_change_is_a_conflict() -> None:
    cells = _cells()
    edits = _norm(cells, [{"op": "replace", "cell_id": "plot", "source": "p2", "reason": "r"}])
    new, inverse = apply_edits(cells, edits)
    new[2]["source"] = "edited by the person"
    with pytest.raises(ProposalConflict, match="cell 'plot' changed"):
        apply_edits(new, inverse)


def test_an_insert_whose_id_exists_is_a_conflict() -> None:
    cells = _cells()
    edits = _norm(cells, [{"op": "insert", "after": None, "source": "x", "reason": "r"}])
    clash = [*cells, _code(edits[0].cell_id, "mine")]
    with pytest.raises(ProposalConflict, match="exists already"):
        apply_edits(clash, edits)


def test_never_a_lost_cell() -> None:
    cells = [_code(f"c{i}", f"x = {i}") for i in range(30)]
    edits = _norm(
        cells,
        [
            {"op": "delete", "cell_id": "c3", "reason": "r"},
            {"op": "move", "cell_id": "c29", "after": None, "reason": "r"},
            {"op": "replace", "cell_id": "c10", "source": "y", "reason": "r"},
            {"op": "insert", "after": "c20", "source": "z", "reason": "r"},
        ],
    )
    new, _ = apply_edits(cells, edits)
    kept = set(_ids(new))
    assert kept == (set(_ids(cells)) - {"c3"}) | {edits[3].cell_id}
    assert len(new) == len(cells)
