"""Read-only views of the live tables for the edges (HTTP, CLI): the tables there are, one
session's view of its table, a round by game code with every seat, a table's shoes, the
histories (seed 002 "Cronologia") and the decision statistics (seed 002 "statistiche in
tempo reale").

Everything is computed from the aggregates (never written): the shared cards the table
round has shown, each seat replayed from its own bets and decisions through the engine
(:func:`ledger.tables.context.seat_of`). So no view holds a card the round has not shown,
a shoe's seed before the shoe is done, or (in a session's view) another player's seat: the
decision statistics are counts over seats, never a seat.

**Statistics.** A situation is what a player sees when deciding: the hand's cards (by
value) and total, soft or hard, a pair or not, the number of cards, the dealer's up card
and the options offered. The counts are a projection of the log (each seat's recorded
decisions replayed through the engine): for one round (what the players beside you chose
in exactly your situation) or over the table's history. Only players' own decisions
count; the runner's automatic actions are not choices. One round's counts are kept by
the application (:class:`LiveStatistics`, composed by :func:`ledger.bootstrap.bootstrap`),
so a thousand players asking during a step do not each replay every seat of the round:
the counts are built by one replay per committed version of the table round (the deal,
each closed step: a handful per round), then moved on from the log, seat by seat, as the
seats' events are written (each seat that changed is loaded and replayed once, its old
observations taken out of the counts and its new ones put in). They always equal a fresh
replay of the round (:func:`replayed_statistics`), for a few rounds at a time.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any
from uuid import UUID

from games.blackjack import Phase, Seat, SharedRound, options
from games.blackjack.hand import hard_value, total_of
from ledger import contracts
from ledger.tables.aggregates import (
    SeatStatus,
    Table,
    TableRound,
    TableRoundCode,
    TableSeat,
    TableShoe,
    round_by_code,
    round_code_id_for,
    seat_id_for,
    shoe_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.context import RoundStates, seat_index, seat_of, seat_openings, shared_of
from ledger.tables.errors import TableNotFound

CASH_OUT = "cash-out"
GAME = "blackjack"


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
        "step": rnd.step
        if rnd.phase is Phase.STEP
        else (0 if rnd.phase is Phase.INSURANCE else None),
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
    rules = rnd.settings.rules()
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
            engine = seat_of(prev, prev.settings.rules(), old) if dealt else None
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
    rnd = find_round(app, code)
    doc = round_history(app, rnd.table, rnd.code)
    states = RoundStates(rnd, rnd.settings.rules())
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
            if s.status is not SeatStatus.VOIDED
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


# -- histories ----------------------------------------------------------------------------


def _round(app: Any, table: str, code: str) -> TableRound:
    rnd = round_by_code(app.find, table, code)
    if rnd is None:
        raise TableNotFound(f"no round {code!r} at table {table!r}", game_code=code)
    return rnd  # type: ignore[no-any-return]


def player_rounds(app: Any, player_id: str) -> list[dict[str, Any]]:
    """Account history rows (date, game, code, bets by type, stakes, wins), newest first.
    A seat whose every chip was taken back has no row, as a round the player never bet in
    (the account history's fold, :mod:`ledger.tables.account_rows`, the same)."""
    rows = []
    for seat_id in seat_index(app)(0):
        seat = app.find(TableSeat, seat_id)
        if seat is None or seat.player_id != player_id or seat.status is SeatStatus.NO_BET:
            continue
        rnd = app.find(TableRound, UUID(seat.round_id))
        bets = seat.bets() if seat.status is not SeatStatus.CANCELLED else {}
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
                "wins": int(result.get("returned", 0)) if seat.status is SeatStatus.SETTLED else 0,
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
        if rnd.phase is not Phase.VOIDED
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
        st = states if states is not None else RoundStates(rnd, rnd.settings.rules())
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


# -- decision statistics --------------------------------------------------------------------

KEPT_ROUNDS = 8
"""Rounds whose counts an application keeps (a few tables' current and previous)."""

SEAT_TOPICS = [
    contracts.SEAT_BET_PLACED,
    contracts.SEAT_BET_UNDONE,
    contracts.SEAT_BETS_CANCELLED,
    contracts.SEAT_DECIDED,
]
"""A seat's events that can change what its replay observes (its chips and decisions)."""

PAGE = 1000

Observation = tuple[int, str, str]
"""(step, situation as JSON, what was asked) for one decision of one seat."""


def situation(shared: SharedRound, seat: Seat) -> dict[str, Any]:
    hand = seat.hands[seat.active if seat.active < len(seat.hands) else 0]
    total, soft = total_of(hand.cards)
    values = [hard_value(c) for c in hand.cards]
    return {
        "window": "insurance" if shared.phase is Phase.INSURANCE else "step",
        "cards": values,
        "total": total,
        "soft": soft,
        "pair": len(values) == 2 and values[0] == values[1],
        "n_cards": len(values),
        "up": shared.up_value,
        "options": [o.kind.value for o in options(shared, seat)],
    }


def step_of(shared: SharedRound) -> int:
    return 0 if shared.phase is Phase.INSURANCE else shared.step


def observations(rnd: TableRound, states: RoundStates, record: TableSeat) -> list[Observation]:
    """Every decision the seat's replay goes through, with its situation."""
    out: list[Observation] = []

    def observe(shared: SharedRound, seat: Seat, asked: str) -> None:
        key = json.dumps(situation(shared, seat), sort_keys=True)
        out.append((step_of(shared), key, asked))

    seat_of(rnd, states.rules, record, observe=observe, states=states)
    return out


def rows_of(counts: dict[str, Counter[str]]) -> list[dict[str, Any]]:
    """Rows ``{"situation": {...}, "counts": {option: players}}``, most frequent first
    (then by situation, so the order does not depend on which seat was seen first)."""
    rows = [
        (-sum(c.values()), k, {"situation": json.loads(k), "counts": dict(sorted(c.items()))})
        for k, c in counts.items()
        if c
    ]
    rows.sort(key=lambda r: (r[0], r[1]))
    return [r[2] for r in rows]


def replayed_statistics(
    app: Any, table: str, round_number: int | None = None, step: int | None = None
) -> list[dict[str, Any]]:
    """The statistics by replaying every seat now: over every round of the table, or one
    round (and one step: 0 is insurance)."""
    found = app.find(Table, table_id_for(table))
    if found is None:
        raise TableNotFound(f"no blackjack table {table!r}", table=table)
    numbers = range(1, found.rounds + 1) if round_number is None else [round_number]
    counts: dict[str, Counter[str]] = {}
    for n in numbers:
        rnd = app.find(TableRound, table_round_id_for(table, n))
        if rnd is None or rnd.up is None:
            continue
        states = RoundStates(rnd, rnd.settings.rules())
        for sid in rnd.seats:
            record = app.find(TableSeat, UUID(sid))
            if record is None:
                continue
            for k, key, asked in observations(rnd, states, record):
                if step is None or k == step:
                    counts.setdefault(key, Counter())[asked] += 1
    return rows_of(counts)


class _RoundCounts:
    """One round version's counts: per step, situation -> option -> players."""

    def __init__(self, rnd: TableRound, position: int) -> None:
        self.version = rnd.version
        self.position = position
        """The log read up to here: every seat event at or before it is counted."""
        self.states = RoundStates(rnd, rnd.settings.rules())
        self.seats: dict[str, list[Observation]] = {}
        self.counts: dict[int, dict[str, Counter[str]]] = {}

    def put(self, sid: str, seen: list[Observation]) -> None:
        for k, key, asked in self.seats.get(sid, []):
            c = self.counts[k][key]
            c[asked] -= 1
            if c[asked] <= 0:
                del c[asked]
            if not c:
                del self.counts[k][key]
        for k, key, asked in seen:
            self.counts.setdefault(k, {}).setdefault(key, Counter())[asked] += 1
        self.seats[sid] = seen


class LiveStatistics:
    """One round's statistics kept per application (see the module's doc)."""

    def __init__(self, app: Any, kept: int = KEPT_ROUNDS) -> None:
        self.app = app
        self.kept = kept
        self.lock = threading.Lock()
        self._rounds: dict[UUID, _RoundCounts] = {}

    def _seat(self, entry: _RoundCounts, rnd: TableRound, sid: str) -> None:
        record = self.app.find(TableSeat, UUID(sid))
        entry.put(sid, [] if record is None else observations(rnd, entry.states, record))

    def _build(self, rnd: TableRound) -> _RoundCounts:
        entry = _RoundCounts(rnd, int(self.app.recorder.max_notification_id() or 0))
        for sid in rnd.seats:
            self._seat(entry, rnd, sid)
        return entry

    def _catch_up(self, entry: _RoundCounts, rnd: TableRound) -> None:
        """Replay again only the seats of the round whose events came after ``position``."""
        changed: set[str] = set()
        position = entry.position
        while True:
            page = self.app.recorder.select_notifications(
                start=position + 1, limit=PAGE, topics=SEAT_TOPICS
            )
            for n in page:
                sid = str(n.originator_id)
                if rnd.dealt_in(sid):
                    changed.add(sid)
            if page:
                position = page[-1].id
            if len(page) < PAGE:
                break
        for sid in changed:
            self._seat(entry, rnd, sid)
        entry.position = position

    def counts(self, rnd: TableRound, step: int) -> dict[str, Counter[str]]:
        """Situation (JSON) -> option -> players, for ``step`` of ``rnd`` (0: insurance),
        as the log has them now. ``rnd``: the table round as the caller read it."""
        if rnd.up is None:
            return {}
        with self.lock:
            entry = self._rounds.get(rnd.id)
            if entry is not None and entry.version > rnd.version:
                # the caller read an older version of the round: answer it without
                # moving the kept counts back
                entry = self._build(rnd)
            elif entry is None or entry.version != rnd.version:
                if entry is None and len(self._rounds) >= self.kept:
                    del self._rounds[next(iter(self._rounds))]
                entry = self._rounds[rnd.id] = self._build(rnd)
            else:
                self._catch_up(entry, rnd)
            return {k: Counter(c) for k, c in entry.counts.get(step, {}).items()}


def live_statistics(app: Any) -> LiveStatistics:
    """The application's kept statistics (``app.table_statistics``, composed by
    :func:`ledger.bootstrap.bootstrap`; an application composed otherwise gets its own
    the first time it asks)."""
    kept = getattr(app, "table_statistics", None)
    if not isinstance(kept, LiveStatistics):
        kept = app.table_statistics = LiveStatistics(app)
    return kept


def decision_statistics(
    app: Any, table: str, round_number: int | None = None, step: int | None = None
) -> list[dict[str, Any]]:
    """Rows ``{"situation": {...}, "counts": {option: players}}``, most frequent first:
    over every round of the table, or one round (and one step: 0 is insurance). One
    round's step is served from the kept counts (:class:`LiveStatistics`); the rest is
    replayed."""
    if round_number is None or step is None:
        return replayed_statistics(app, table, round_number, step)
    found = app.find(Table, table_id_for(table))
    if found is None:
        raise TableNotFound(f"no blackjack table {table!r}", table=table)
    rnd = app.find(TableRound, table_round_id_for(table, round_number))
    if rnd is None:
        return []
    return rows_of(live_statistics(app).counts(rnd, step))
