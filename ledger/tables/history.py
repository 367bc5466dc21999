"""Histories of the live tables, read from the log: a player's account history rows, a
round's game history, and one player's own view of a round (seed 002 "Cronologia").

Computed on demand from the aggregates (seat openings are found through their topic in
the notification log), so they are always derivable from the log alone. No card beyond
those the round has shown appears in any of them.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ledger.tables.codes import round_by_code
from ledger.tables.compose import seat_index
from ledger.tables.errors import TableNotFound
from ledger.tables.replay import RoundStates, seat_of
from ledger.tables.seat import TableSeat, seat_id_for
from ledger.tables.table import rules_of
from ledger.tables.table_round import TableRound

GAME = "blackjack"


def _round(app: Any, table: str, code: str) -> TableRound:
    rnd = round_by_code(app.find, table, code)
    if rnd is None:
        raise TableNotFound(f"no round {code!r} at table {table!r}", game_code=code)
    return rnd  # type: ignore[no-any-return]


def player_rounds(app: Any, player_id: str) -> list[dict[str, Any]]:
    """Account history rows (date, game, code, bets by type, stakes, wins), newest first."""
    rows = []
    for seat_id in seat_index(app)(0):
        seat = app.find(TableSeat, seat_id)
        if seat is None or seat.player_id != player_id:
            continue
        rnd = app.find(TableRound, UUID(seat.round_id))
        bets = seat.bets() if seat.status != "cancelled" else {}
        result = seat.result
        rows.append(
            {
                "date": rnd.started_at,
                "game": GAME,
                "table": seat.table,
                "code": seat.code,
                "session_id": seat.session_id,
                "bets": bets,
                "stakes": int(result.get("staked", sum(bets.values()))),
                "wins": int(result.get("returned", 0)) if seat.status == "settled" else 0,
                "status": seat.status,
                "currency": rnd.currency,
            }
        )
    rows.sort(key=lambda r: str(r["date"]), reverse=True)
    return rows


def round_history(app: Any, table: str, code: str) -> dict[str, Any]:
    """Every phase with its time, the shared and dealer cards, seats and totals."""
    rnd = _round(app, table, code)
    return {
        "code": rnd.code,
        "table": rnd.table,
        "round": rnd.number,
        "shoe": rnd.shoe_number,
        "shoe_position": rnd.start,
        "started_at": rnd.started_at,
        "phases": [list(p) for p in rnd.phases],
        "status": rnd.phase,
        "player_cards": list(rnd.player_cards),
        "step_cards": list(rnd.step_cards),
        "dealer_cards": [c for c in [rnd.up, rnd.hole, *rnd.dealer_draws] if c is not None],
        "seats": len(rnd.seats),
        "totals": dict(rnd.totals),
        "automatic": {k: [list(a) for a in v] for k, v in rnd.automatic.items()},
        "void": None
        if rnd.phase != "voided"
        else {"reason": rnd.void_reason, "incident_id": rnd.incident_id},
    }


def automatic_index(rnd: TableRound) -> dict[str, list[tuple[str, str, str]]]:
    """Seat id -> the runner's automatic actions for it (step, kind, reason), in one pass
    over the round's actions (a round's detail asks for every seat)."""
    index: dict[str, list[tuple[str, str, str]]] = {}
    for step, actions in rnd.automatic.items():
        for who, kind, reason in actions:
            index.setdefault(who, []).append((step, kind, reason))
    return index


def seat_history(app: Any, table: str, code: str, session_id: str) -> dict[str, Any]:
    """One player's own view: bets, decisions per step (automatic ones marked), hands,
    payouts."""
    rnd = _round(app, table, code)
    seat = app.find(TableSeat, seat_id_for(rnd.id, session_id))
    if seat is None:
        raise TableNotFound(f"session {session_id} has no seat in {code}", game_code=code)
    return history_of(rnd, seat)


def history_of(
    rnd: TableRound,
    seat: TableSeat,
    states: RoundStates | None = None,
    automatic: dict[str, list[tuple[str, str, str]]] | None = None,
) -> dict[str, Any]:
    """:func:`seat_history` of a seat already loaded (``states`` and ``automatic``: the
    round's shared states and :func:`automatic_index`, when the caller has them for
    every seat)."""
    sid = str(seat.id)
    decisions: dict[str, Any] = {
        k: {"decision": v[0], "requested": v[1], "automatic": v[2]}
        for k, v in seat.decisions.items()
    }
    index = automatic if automatic is not None else automatic_index(rnd)
    for step, kind, reason in index.get(sid, []):
        decisions[step] = {"decision": kind, "requested": None, "automatic": reason}
    hands = []
    if rnd.dealt_in(sid):
        st = states if states is not None else RoundStates(rnd, rules_of(rnd.config))
        engine = seat_of(rnd, st.rules, seat, states=st)
        hands = [
            {"cards": [str(c) for c in h.cards], "stake": h.stake, "doubled": h.doubled}
            for h in engine.hands
        ]
    return {
        "code": rnd.code,
        "status": seat.status,
        "bets": seat.bets(),
        "decisions": dict(sorted(decisions.items(), key=lambda kv: int(kv[0]))),
        "hands": hands,
        "result": dict(seat.result),
        "staked": seat.debited,
        "paid": seat.credited,
    }
