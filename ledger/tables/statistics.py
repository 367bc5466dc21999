"""Decision statistics (seed 002 "statistiche in tempo reale"): per situation, how many
players chose each option.

A situation is what a player sees when deciding: the hand's cards (by value) and total,
soft or hard, a pair or not, the number of cards, the dealer's up card and the options
offered. The counts are a projection of the log (each seat's recorded decisions replayed
through the engine): for one round (what the players beside you chose in exactly your
situation) or over the table's history. Only players' own decisions count; the runner's
automatic actions are not choices.

One round's counts are kept in memory per application (:class:`LiveStatistics`), so a
thousand players asking during a step do not each replay every seat of the round: the
counts are built by one replay per committed version of the table round (the deal, each
closed step: a handful per round), then moved on from the log, seat by seat, as the
seats' events are written (each seat that changed is loaded and replayed once, its old
observations taken out of the counts and its new ones put in). They always equal a fresh
replay of the round (:func:`replayed_statistics`), for a few rounds at a time
(``KEPT_ROUNDS``).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import Counter
from typing import Any
from uuid import UUID

from games.blackjack import Phase, Seat, SharedRound, options
from games.blackjack.hand import hard_value, total_of
from ledger import contracts
from ledger.tables.errors import TableNotFound
from ledger.tables.replay import RoundStates, seat_of
from ledger.tables.seat import TableSeat
from ledger.tables.table import Table, rules_of, table_id_for
from ledger.tables.table_round import TableRound, table_round_id_for

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
        states = RoundStates(rnd, rules_of(rnd.config))
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
        self.states = RoundStates(rnd, rules_of(rnd.config))
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


_LIVE: weakref.WeakKeyDictionary[Any, LiveStatistics] = weakref.WeakKeyDictionary()
_LIVE_LOCK = threading.Lock()


def live_statistics(app: Any) -> LiveStatistics:
    """The application's kept statistics (one per application object)."""
    with _LIVE_LOCK:
        found = _LIVE.get(app)
        if found is None:
            found = _LIVE[app] = LiveStatistics(app)
        return found


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
