"""The live tables in the catalogue (``GET /v1/tables`` and ``/v1/games``): each table's
limits per bet type, windows, paytables, the certified RTP of what it plays (the main game
under its ten-up reading, every side bet, insurance, always cashing out) and its cash-out
offer table. The figures are the shipped certified ones (no maths at request time).

In ``croupier serve --cells`` each cell's API lists every cell's tables: the router sets
``state.cells`` on each cell's application (:class:`Placement`, the open cells), and a
table's row is read from the cell its id is placed in (:mod:`cells.router`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from games.blackjack import PAYTABLES
from games.blackjack.cashout import cashout_table
from games.blackjack.certified import certified_rows
from games.percent import as_percent
from ledger.casino import Casino
from ledger.tables import views
from ledger.tables.aggregates import Table, TableRound
from ledger.tables.config import TableConfig

MAIN_PAYS = {"blackjack": "3:2", "win": "1:1", "push": "stake back", "six-card-charlie": "1:1"}
INSURANCE_PAYS = "2:1"


def _rtp_rows(config: TableConfig) -> list[dict[str, Any]]:
    main = f"main, ten-up {config.ten_up.value}"
    sides = set(config.paytables.values())
    out = []
    for r in certified_rows():
        if r.paytable_id == main and r.play in ("optimal", "basic strategy"):
            bet = "main"
        elif r.paytable_id in sides:
            bet = next(k for k, v in config.paytables.items() if v == r.paytable_id)
        elif r.paytable_id.startswith("insurance"):
            bet = "insurance"
        elif r.paytable_id == config.cashout_table_id and r.play.startswith("always"):
            bet = "always-cash-out"
        else:
            continue
        out.append(
            {
                "bet": bet,
                "paytable_id": r.paytable_id,
                "play": r.play,
                "percent": str(as_percent(r.rtp)),
                "published": r.published,
                "agreement": r.agreement,
            }
        )
    return out


def offers(table_id: str) -> dict[str, dict[str, dict[str, int]]]:
    """Cash-out offers in hundredths of the main bet, by hard/soft, hand total, then the
    dealer's up card (11 = ace): the layout of the published table."""
    out: dict[str, dict[str, dict[str, int]]] = {"hard": {}, "soft": {}}
    for (total, soft, up), value in sorted(cashout_table(table_id).offers.items()):
        out["soft" if soft else "hard"].setdefault(str(total), {})[str(up)] = value
    return out


def table_row(t: Table, current: TableRound | None) -> dict[str, Any]:
    config = t.settings
    return {
        "table": t.table,
        "currency": t.currency,
        "limits": {k: list(v) for k, v in config.limits.items()},
        "chip": config.chip,
        "windows_ms": {
            "betting": config.betting_ms,
            "insurance": config.insurance_ms,
            "step": config.step_ms,
            "grace": config.grace_ms,
        },
        "decks": config.decks,
        "penetration_permille": list(config.penetration_permille),
        "ten_up": config.ten_up.value,
        "paytables": {
            "main": MAIN_PAYS,
            "insurance": INSURANCE_PAYS,
            **{
                bet: {"id": pid, "pays": {k: f"{v}:1" for k, v in PAYTABLES[pid].pays.items()}}
                for bet, pid in config.paytables.items()
            },
        },
        "rtp": _rtp_rows(config),
        "cashout_table": {
            "id": config.cashout_table_id,
            "offers": offers(config.cashout_table_id),
        },
        "round": None if current is None else current.code,
        "phase": None if current is None else current.phase,
    }


class Placement(Protocol):
    """The cells of a deployment as the catalogue needs them (``cells.deployment.Cells``)."""

    @property
    def apps(self) -> Mapping[str, Casino]: ...

    def app_for(self, key: str) -> Casino: ...


def _placement(state: Any) -> Placement | None:
    placement: Placement | None = getattr(state, "cells", None)
    return placement


def rows(state: Any, app: Casino) -> list[dict[str, Any]]:
    """Every table's row: this store's, in the order they were created; in cells, every
    cell's, ordered by table id (so no order tells a table's cell)."""
    placement = _placement(state)
    if placement is None:
        return [table_row(t, views.current_round(app, t)) for t in views.tables(app)]
    out = [
        table_row(t, views.current_round(store, t))
        for store in placement.apps.values()
        for t in views.tables(store)
    ]
    return sorted(out, key=lambda row: str(row["table"]))


def row(state: Any, app: Casino, table: str) -> dict[str, Any]:
    """One table's row, read from the cell the table is placed in (in cells)."""
    placement = _placement(state)
    store = app if placement is None else placement.app_for(table)
    t = views.table(store, table)
    return table_row(t, views.current_round(store, t))
