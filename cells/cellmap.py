"""The cell map: which cells a deployment has, where each one's store is, and the stable
rule that puts a player in one of them.

A cell is a whole croupier application (``ledger.bootstrap``) with its own database or
schema, its own keys, signed log (log id, genesis) and checkpoints. A player's cell is
chosen by rendezvous hashing: the cell whose ``SHA-256("croupier/cell/v1", cell, player)``
is highest. It needs no lookup table, gives the same answer in every process and for
ever while the map's cell names stay the same, and a table's cell is chosen the same way
from its table id. The map is a JSON file (``cells.json``)::

    {"cells": [{"name": "c0", "database_url": "postgresql://…?schema=c0"},
               {"name": "c1", "database_url": "postgresql://…?schema=c1", "pin": "SHA256:…"}],
     "index_key": "keys/cells-index.pem", "index": "cells-index.json",
     "index_pin": "SHA256:…"}

``data_dir`` (default ``<map dir>/<name>``) holds a cell's SQLite file (without
``database_url``) and its keys; ``pin`` is the genesis fingerprint an auditor pinned for
that cell; ``index_key`` is the deployment's key that signs the index of the cells' tree
heads (:mod:`cells.index`), ``index`` where the server writes that index, ``index_pin``
the fingerprint of the index key an auditor pinned. Relative paths are relative to the
map file.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
"""A cell name: it is a prefix of session tokens and a path segment, so short and plain."""
_LABEL = b"croupier/cell/v1\x00"


class CellMapError(ValueError):
    """The cell map file is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class Cell:
    name: str
    data_dir: Path
    database_url: str | None = None
    keys_dir: Path | None = None
    pin: str | None = None

    @property
    def db(self) -> str:
        """The ``--db`` argument of ``audit-cli`` for this cell's store."""
        return self.database_url or str(self.data_dir / "casino.sqlite")


@dataclass(frozen=True)
class CellMap:
    cells: tuple[Cell, ...]
    index_key: Path
    index_path: Path
    index_pin: str | None = None

    def __post_init__(self) -> None:
        names = [c.name for c in self.cells]
        if not names:
            raise CellMapError("a cell map needs at least one cell")
        if len(set(names)) != len(names):
            raise CellMapError(f"cell names must be unique, got {names}")
        stores = [c.database_url or str(c.data_dir.resolve()) for c in self.cells]
        if len(set(stores)) != len(stores):
            raise CellMapError("two cells share one store: each cell needs its own")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cells]

    def cell(self, name: str) -> Cell:
        for c in self.cells:
            if c.name == name:
                return c
        raise CellMapError(f"no cell named {name!r} (cells: {', '.join(self.names)})")

    def cell_for(self, key: str) -> Cell:
        """The cell of a player id (or a table id): rendezvous hashing, no lookup.

        >>> m = CellMap((Cell("a", Path("a")), Cell("b", Path("b"))), Path("k"), Path("i"))
        >>> m.cell_for("ann").name, m.cell_for("bob").name
        ('b', 'a')
        """
        return max(self.cells, key=lambda c: _weight(c.name, key))


def _weight(cell: str, key: str) -> bytes:
    return hashlib.sha256(_LABEL + cell.encode() + b"\x00" + key.encode()).digest()


def load(path: Path | str) -> CellMap:
    """Read a cell map file (see the module docstring); a bad one is a :class:`CellMapError`."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CellMapError(f"cannot read the cell map {path}: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise CellMapError(f"{path}: a cell map is an object with a list 'cells'")
    base = path.parent
    cells = tuple(_cell(entry, base, path) for entry in doc["cells"])
    return CellMap(
        cells,
        _path(base, doc.get("index_key", "keys/cells-index.pem")),
        _path(base, doc.get("index", "cells-index.json")),
        _optional_str(doc, "index_pin", path),
    )


def _cell(entry: Any, base: Path, path: Path) -> Cell:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise CellMapError(f"{path}: each cell is an object with a 'name'")
    name = entry["name"]
    if not NAME.match(name):
        raise CellMapError(f"{path}: cell name {name!r} must match {NAME.pattern}")
    url = _optional_str(entry, "database_url", path)
    keys = _optional_str(entry, "keys_dir", path)
    return Cell(
        name,
        _path(base, entry.get("data_dir", name)),
        url,
        None if keys is None else _path(base, keys),
        _optional_str(entry, "pin", path),
    )


def _optional_str(doc: dict[str, Any], key: str, path: Path) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise CellMapError(f"{path}: {key!r} must be a string")
    return value


def _path(base: Path, value: Any) -> Path:
    if not isinstance(value, str):
        raise CellMapError(f"a path in the cell map must be a string, got {value!r}")
    p = Path(value)
    return p if p.is_absolute() else base / p
