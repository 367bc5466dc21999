"""Read-only views of the live tables for the edges (HTTP, CLI): the tables there are, one
session's view of its table, a round by game code with every seat, a table's shoes.

Everything is computed from the aggregates (never written): the shared cards the table
round has shown, each seat replayed from its own bets and decisions through the engine
(:mod:`ledger.tables.replay`). So no view holds a card the round has not shown, a shoe's
seed before the shoe is done, or (in a session's view) another player's seat: the
decision statistics are counts over seats, never a seat.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from games.blackjack import Phase, Seat, SharedRound, options
from ledger import contracts
from ledger.tables.codes import TableRoundCode, round_by_code, round_code_id_for
from ledger.tables.compose import seat_openings
from ledger.tables.errors import TableNotFound
from ledger.tables.history import automatic_index, history_of
from ledger.tables.replay import RoundStates, seat_of, shared_of
from ledger.tables.seat import TableSeat, seat_id_for
from ledger.tables.shoe import TableShoe, shoe_id_for
from ledger.tables.statistics import live_statistics, situation
from ledger.tables.table import Table, rules_of, table_id_for
from ledger.tables.table_round import TableRound, table_round_id_for

CASH_OUT = "cash-out"


def tables(app: Any) -> list[Table]:
    """Every table, in the order they were created (their opening events)."""
    out: list[Table] = []
    start = 1
    while True:
        page = app.recorder.select_notifications(
            start=start, limit=500, topics=[contracts.TABLE_OPENED]
        )
        for note in page:
            found = app.find(Table, note.originator_id)
            if found is not None:
                out.append(found)
        if len(page) < 500:
            return out
        start = page[-1].id + 1


def table(app: Any, name: str) -> Table:
    found = app.find(Table, table_id_for(name))
    if found is None:
        raise TableNotFound(f"no blackjack table {name!r}", table=name)
    return found  # type: ignore[no-any-return]


def current_round(app: Any, t: Table) -> TableRound | None:
    return None if t.round_id is None else app.find(TableRound, UUID(t.round_id))


def find_round(app: Any, code: str) -> TableRound:
    """A table round by its game code (``IBJ-...``), whichever table played it."""
    index = app.find(TableRoundCode, round_code_id_for(code)) if isinstance(code, str) else None
    if isinstance(index, TableRoundCode):
        rnd = round_by_code(app.find, index.table, code)
        if rnd is not None:
            return rnd  # type: ignore[no-any-return]
    raise TableNotFound(f"no blackjack round {code!r}", game_code=code)


# -- one session's view ------------------------------------------------------------------------


def _hand(h: Any) -> dict[str, Any]:
    return {
        "cards": [str(c) for c in h.cards],
        "total": h.total,
        "soft": h.soft,
        "stake": h.stake,
        "doubled": h.doubled,
        "split": h.split,
        "blackjack": h.blackjack,
        "bust": h.bust,
    }


def _decisions(rnd: TableRound, record: TableSeat) -> dict[str, dict[str, Any]]:
    """Per step ("0" = insurance): what applied, what was asked for, and why the runner
    or the engine chose it when the player did not (timeout, insufficient balance)."""
    out = {
        k: {"decision": v[0], "requested": v[1], "automatic": v[2]}
        for k, v in record.decisions.items()
    }
    sid = str(record.id)
    for step, actions in rnd.automatic.items():
        for who, kind, reason in actions:
            if who == sid:
                out[step] = {"decision": kind, "requested": None, "automatic": reason}
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _seat_view(rnd: TableRound, record: TableSeat, engine: Seat | None) -> dict[str, Any]:
    dealt = str(record.id) in rnd.seats
    return {
        "code": rnd.code,
        "status": record.status,
        "dealt": dealt,
        "connected": record.connected,
        "bets": record.bets(),
        "chips": [[b, int(a)] for b, a in record.chips],
        "hands": [] if engine is None else [_hand(h) for h in engine.hands],
        "active_hand": None if engine is None or not engine.hands else engine.active,
        "insurance": None if engine is None else engine.insurance,
        "cashed_out": None if engine is None else engine.cashed_out,
        "decisions": _decisions(rnd, record),
        "staked": record.debited,
        "paid": record.credited,
        "result": dict(record.result) or None,
    }


def _shared_cards(rnd: TableRound) -> dict[str, Any]:
    return {
        "player": list(rnd.player_cards),
        "up": rnd.up,
        "steps": list(rnd.step_cards),
        "dealer": [c for c in [rnd.up, rnd.hole, *rnd.dealer_draws] if c is not None],
    }


def _statistics(
    app: Any, rnd: TableRound, shared: SharedRound, engine: Seat
) -> list[dict[str, str | int]]:
    """seed 002 "statistiche in tempo reale": what the players of this round chose in
    exactly this seat's situation (same cards, up card and options), in this window: from
    the application's kept counts, not a replay of every seat per request."""
    step = 0 if shared.phase is Phase.INSURANCE else shared.step
    mine = situation(shared, engine)
    key = json.dumps(mine, sort_keys=True)
    counts: dict[str, int] = dict(live_statistics(app).counts(rnd, step).get(key, {}))
    return [{"decision": o, "players": int(counts.get(o, 0))} for o in mine["options"]]


def round_view(rnd: TableRound) -> dict[str, Any]:
    """What every client of the table sees of the round (a spectator too): phase, step,
    server deadline, the cards shown, the number of seats; never a seat."""
    return {
        "number": rnd.number,
        "code": rnd.code,
        "phase": rnd.phase,
        "step": rnd.step if rnd.phase == "step" else (0 if rnd.phase == "insurance" else None),
        "deadline": rnd.deadline,
        "paused": rnd.paused_at is not None,
        "started_at": rnd.started_at,
        "cards": _shared_cards(rnd),
        "seats": len(rnd.seats),
    }


def session_view(
    app: Any, name: str, session_id: str, show_cash_out: bool = True
) -> dict[str, Any]:
    """What the session's game client shows now: the round's phase and server deadline,
    the cards shown, its own seat (hands, bets, decisions, result), the options it may
    take now with their amounts (a cash-out left out when the player hides it) and the
    decision statistics of its situation; its seat in the previous round, for the result
    of a round that settled while the next one opened."""
    t = table(app, name)
    rnd = current_round(app, t)
    view: dict[str, Any] = {
        "table": t.table,
        "currency": t.currency,
        "round": None,
        "seat": None,
        "options": [],
        "statistics": [],
        "previous": None,
    }
    if rnd is None:
        return view
    rules = rules_of(rnd.config)
    view["round"] = round_view(rnd)
    record = app.find(TableSeat, seat_id_for(rnd.id, session_id))
    if record is not None:
        dealt = str(record.id) in rnd.seats
        engine = seat_of(rnd, rules, record) if dealt else None
        view["seat"] = _seat_view(rnd, record, engine)
        if dealt and engine is not None and not rnd.closed and rnd.paused_at is None:
            shared = shared_of(rnd, rules)
            offered = options(shared, engine)
            view["options"] = [
                {"decision": o.kind.value, "amount": o.amount}
                for o in offered
                if show_cash_out or o.kind.value != CASH_OUT
            ]
            if offered:
                view["statistics"] = _statistics(app, rnd, shared, engine)
    if rnd.number > 1:
        prev = app.find(TableRound, table_round_id_for(t.table, rnd.number - 1))
        old = None if prev is None else app.find(TableSeat, seat_id_for(prev.id, session_id))
        if prev is not None and old is not None:
            dealt = str(old.id) in prev.seats
            engine = seat_of(prev, rules_of(prev.config), old) if dealt else None
            view["previous"] = {
                **_seat_view(prev, old, engine),
                "cards": _shared_cards(prev),
                "phase": prev.phase,
            }
    return view


# -- operator and auditor --------------------------------------------------------------------


def round_seats(app: Any, rnd: TableRound) -> list[TableSeat]:
    """Every seat opened in the round (dealt or not), in opening order. The openings
    after the round's ``seats_from`` are read from the log and their events decoded (each
    names its round): only the round's own seats are loaded, not every later round's."""
    out: list[TableSeat] = []
    rid = str(rnd.id)
    for note in seat_openings(app, rnd.seats_from):
        if getattr(app.mapper.to_domain_event(note), "round_id", None) != rid:
            continue
        seat = app.find(TableSeat, note.originator_id)
        if seat is not None and seat.round_id == rid:
            out.append(seat)
    return out


def round_detail(app: Any, code: str) -> dict[str, Any]:
    """A round by game code for a dispute: every phase with its time and deadline, the
    cards shown, the automatic actions, totals, the void; every seat's bets, decisions,
    hands and payouts. The shoe's seed only once the shoe is done."""
    from ledger.tables.history import round_history

    rnd = find_round(app, code)
    doc = round_history(app, rnd.table, rnd.code)
    states = RoundStates(rnd, rules_of(rnd.config))
    automatic = automatic_index(rnd)
    shoe = app.find(TableShoe, UUID(rnd.shoe_id))
    doc["currency"] = rnd.currency
    doc["config"] = dict(rnd.config)
    doc["shoe_commitment"] = None if shoe is None else shoe.commitment
    doc["shoe_seed"] = None if shoe is None else shoe.seed
    doc["seat_list"] = [
        {
            "seat_id": str(s.id),
            "session_id": s.session_id,
            "player_id": s.player_id,
            "dealt": rnd.dealt_in(str(s.id)),
            **history_of(rnd, s, states, automatic),
            "void": None
            if s.status != "voided"
            else {
                "reason": s.void_reason,
                "incident_id": s.incident_id,
                "refunded": s.refunded,
                "reversed_win": s.reversed_win,
            },
        }
        for s in round_seats(app, rnd)
    ]
    return doc


def round_originators(app: Any, rnd: TableRound) -> set[UUID]:
    """The aggregates whose events make up a round: the table round and its seats."""
    return {rnd.id, *(s.id for s in round_seats(app, rnd))}


def shoes(app: Any, name: str) -> list[dict[str, Any]]:
    """A table's shoes: each one's commitment SHA-256(seed), and the seed once revealed
    (after the round that brought out the cut card)."""
    t = table(app, name)
    out = []
    for n in range(1, t.shoes + 1):
        shoe = app.find(TableShoe, shoe_id_for(t.table, n))
        if shoe is None:
            continue
        out.append(
            {
                "number": shoe.number,
                "shoe_id": str(shoe.id),
                "decks": shoe.decks,
                "rules_version": shoe.rules_version,
                "commitment": shoe.commitment,
                "shuffled_at": shoe.shuffled_at,
                "seed": shoe.seed,
                "rounds": shoe.rounds if shoe.seed is not None else None,
            }
        )
    return out
