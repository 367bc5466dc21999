"""Decision statistics (seed 002 "statistiche in tempo reale"): per situation, how many
players chose each option.

A situation is what a player sees when deciding: the hand's cards (by value) and total,
soft or hard, a pair or not, the number of cards, the dealer's up card and the options
offered. The counts are a projection of the log (each seat's recorded decisions replayed
through the engine), computed on demand: for the open step of the current round (what the
players beside you chose in exactly your situation) or over the table's history. Only
players' own decisions count; the runner's automatic actions are not choices.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any
from uuid import UUID

from games.blackjack import Phase, Seat, SharedRound, options
from games.blackjack.hand import hard_value, total_of
from ledger.tables.errors import TableNotFound
from ledger.tables.replay import seat_of
from ledger.tables.seat import TableSeat
from ledger.tables.table import Table, rules_of, table_id_for
from ledger.tables.table_round import TableRound, table_round_id_for


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


def decision_statistics(
    app: Any, table: str, round_number: int | None = None, step: int | None = None
) -> list[dict[str, Any]]:
    """Rows ``{"situation": {...}, "counts": {option: players}}``, most frequent first:
    over every round of the table, or one round (and one step: 0 is insurance)."""
    found = app.find(Table, table_id_for(table))
    if found is None:
        raise TableNotFound(f"no blackjack table {table!r}", table=table)
    numbers = range(1, found.rounds + 1) if round_number is None else [round_number]
    counts: dict[str, Counter[str]] = {}

    for n in numbers:
        rnd = app.find(TableRound, table_round_id_for(table, n))
        if rnd is None or rnd.up is None:
            continue
        rules = rules_of(rnd.config)

        def observe(shared: SharedRound, seat: Seat, asked: str) -> None:
            if step is not None and (0 if shared.phase is Phase.INSURANCE else shared.step) != step:
                return
            key = json.dumps(situation(shared, seat), sort_keys=True)
            counts.setdefault(key, Counter())[asked] += 1

        for sid in rnd.seats:
            record = app.find(TableSeat, UUID(sid))
            if record is not None:
                seat_of(rnd, rules, record, observe=observe)
    rows = [{"situation": json.loads(k), "counts": dict(c)} for k, c in counts.items()]
    rows.sort(key=lambda r: -sum(r["counts"].values()))
    return rows
