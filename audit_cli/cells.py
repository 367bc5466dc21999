"""``audit-cli verify --cells cells.json``: every cell's log verified on its own (as
``verify --db`` does), then the signed index of the cells' tree heads checked against them
(:mod:`cells.index`). Every finding names its cell."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from audit_cli.checker import Report, Trust, normalise_pin
from audit_cli.findings import Finding
from audit_cli.verify import verify_db
from cells import index
from cells.cellmap import Cell, CellMap
from ledger.keys import KeyringError, load_public_keys


@dataclass
class CellsReport:
    reports: dict[str, Report] = field(default_factory=dict)
    findings: list[tuple[str, Finding]] = field(default_factory=list)
    """(cell, finding): each cell's own findings, then the index's."""
    index_trust: Trust = Trust.UNPINNED
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "index_trust": self.index_trust,
            "cells": {name: r.to_dict() for name, r in self.reports.items()},
            "findings": [{"cell": cell, **asdict(f)} for cell, f in self.findings],
            "warnings": self.warnings,
        }


def _cell_keys(cell: Cell) -> dict[str, Any]:
    if cell.pin:
        return {}  # pinned: the cell's own key history names every key
    path = (cell.keys_dir or cell.data_dir / "keys") / "keyring.json"
    try:
        return load_public_keys(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as e:
        raise KeyringError(
            f"cell {cell.name}: no 'pin' in the cell map and no public keys at {path}: {e}"
        ) from e


def _pin(value: str | None, what: str) -> str | None:
    if not value:
        return None
    try:
        return "SHA256:" + normalise_pin(value)
    except ValueError as e:
        raise KeyringError(f"{what}: {e}") from e


def verify_cells(cellmap: CellMap, *, jobs: int | None = None) -> CellsReport:
    """Every cell verified; the index's head of each cell is also checked as an anchor of
    that cell's log (its root over its size must be a prefix of the log)."""
    out = CellsReport()
    heads = _read_index(cellmap, out)
    for cell in cellmap.cells:
        head = (heads or {}).get(cell.name)
        anchor = head if _is_head(head) else None
        report = verify_db(
            cell.db, _cell_keys(cell), jobs=jobs, pin=_pin(cell.pin, cell.name), anchor=anchor
        )
        out.reports[cell.name] = report
        for f in report.findings:
            if f.check == "anchor":  # the index's head is not in this cell's log
                f = Finding("cells-index-head", f"the index's head: {f.message}")
            out.findings.append((cell.name, f))
        if report.trust != "pinned":
            out.warnings.append(f"cell {cell.name}: checked against an UNPINNED local keyring")
    if heads is not None:
        _check_heads(cellmap, heads, out)
    return out


def _is_head(head: dict[str, Any] | None) -> bool:
    return (
        head is not None
        and type(head.get("seq")) is int
        and head["seq"] > 0
        and type(head.get("tree_size")) is int
        and isinstance(head.get("root_hash"), str)
        and len(head["root_hash"]) == 64
        and all(c in "0123456789abcdef" for c in head["root_hash"])
    )


def _read_index(cellmap: CellMap, out: CellsReport) -> dict[str, dict[str, Any]] | None:
    """The index's heads by cell, once its signature (and pin) are checked."""

    def finding(check: str, message: str) -> None:
        out.findings.append(("*", Finding(check, message)))

    try:
        doc = json.loads(cellmap.index_path.read_text())
    except (OSError, ValueError) as e:
        finding("cells-index-missing", f"cannot read the index {cellmap.index_path}: {e}")
        return None
    try:
        signer = index.check_signature(doc)
    except index.CellIndexError as e:
        finding("cells-index-signature", str(e))
        return None
    pin = _pin(cellmap.index_pin, "index_pin")
    if pin is not None:
        out.index_trust = Trust.PINNED
        if signer != pin:
            finding("cells-index-pin", f"the index is signed by {signer}, not the pinned {pin}")
    else:
        out.warnings.append(f"the index key {signer} is not pinned (index_pin in the cell map)")
    return {h["cell"]: h for h in doc["cells"]}


def _check_heads(cellmap: CellMap, heads: dict[str, dict[str, Any]], out: CellsReport) -> None:
    def finding(cell: str, check: str, message: str) -> None:
        out.findings.append((cell, Finding(check, message)))

    for name in sorted(set(heads) - set(cellmap.names)):
        finding(name, "cells-index-cell", f"the index names cell {name!r}, which the map lacks")
    for name, report in out.reports.items():
        head = heads.get(name)
        if head is None:
            finding(name, "cells-index-cell", f"the index does not name cell {name!r}")
        elif (name, "cells-index-head") not in {(c, f.check) for c, f in out.findings}:
            _check_head(name, head, report, finding)  # (a head not in the log: said once)


def _check_head(name: str, head: dict[str, Any], report: Report, finding: Any) -> None:
    if head.get("log_id") != report.log_id or head.get("genesis") != report.genesis_fingerprint:
        finding(
            name,
            "cells-index-log",
            f"the index names log {head.get('log_id')} (genesis {head.get('genesis')}); "
            f"the cell's log is {report.log_id} (genesis {report.genesis_fingerprint})",
        )
    seq, newest = head.get("seq"), (report.latest_head or {}).get("seq", 0)
    if not (head.get("seq") == 0 or _is_head(head)):
        finding(name, "cells-index-head", f"the index's head of {name} is malformed: {head}")
        return
    assert isinstance(seq, int)
    if seq > newest:
        finding(
            name,
            "cells-index-head",
            f"the index names checkpoint {seq} (size {head.get('tree_size')}), the cell's "
            f"newest is {newest}: checkpoints the index saw are gone",
        )
        return
    # Out of date: the cell holds events the index's head does not cover. Checkpoint rows
    # after it do not count (each checkpoint covers the previous checkpoint's row): the
    # head of checkpoint k covers k - 1 checkpoint rows.
    covered = int(head.get("tree_size", 0)) - max(seq - 1, 0)
    uncovered = (report.events - report.checkpoints) - covered
    if uncovered > 0:
        finding(
            name,
            "cells-index-stale",
            f"the index names checkpoint {seq} (size {head.get('tree_size', 0)}); the cell "
            f"has {uncovered} event(s) after it (newest checkpoint {newest}): the index is "
            "out of date",
        )
