"""The cell map: a player's cell by the stable rule, and a bad map refused with a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cells.cellmap import Cell, CellMap, CellMapError, load
from cells.tokens import SEPARATOR, token_cell


def write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "cells.json"
    path.write_text(json.dumps(doc))
    return path


def test_adding_a_cell_moves_only_the_players_it_wins(tmp_path: Path) -> None:
    two = CellMap((Cell("a", tmp_path / "a"), Cell("b", tmp_path / "b")), Path("k"), Path("i"))
    three = CellMap((*two.cells, Cell("c", tmp_path / "c")), Path("k"), Path("i"))
    players = [f"p{i}" for i in range(300)]
    moved = [p for p in players if two.cell_for(p).name != three.cell_for(p).name]
    assert moved and all(three.cell_for(p).name == "c" for p in moved)


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        ({"cells": []}, "at least one cell"),
        ({"cells": [{"name": "a"}, {"name": "a"}]}, "unique"),
        ({"cells": [{"name": "A b"}]}, "must match"),
        ({"cells": [{"name": "a", "data_dir": "x"}, {"name": "b", "data_dir": "x"}]}, "share"),
        ({"cells": [{"name": "a", "pin": 7}]}, "'pin' must be a string"),
        ({"cell": []}, "a list 'cells'"),
    ],
)
def test_a_bad_cell_map_is_refused_with_its_reason(
    tmp_path: Path, doc: object, reason: str
) -> None:
    with pytest.raises(CellMapError, match=reason):
        load(write(tmp_path, doc))


def test_relative_paths_are_relative_to_the_map(tmp_path: Path) -> None:
    m = load(write(tmp_path, {"cells": [{"name": "a"}], "index": "idx.json"}))
    assert m.cell("a").data_dir == tmp_path / "a"
    assert m.index_path == tmp_path / "idx.json"
    assert m.cell("a").db == str(tmp_path / "a" / "casino.sqlite")


def test_a_session_token_names_its_cell() -> None:
    assert token_cell(f"c1{SEPARATOR}abc.123.mac") == "c1"
    assert token_cell("operator-token") is None


def test_serve_refuses_a_bad_cell_map_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from api.cli import main

    assert main(["serve", "--cells", str(write(tmp_path, {"cells": [{"name": "A"}]}))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "must match" in err and err.count("\n") == 1
