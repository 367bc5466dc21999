"""Infinite Blackjack engine throughput: seats settled per second in one shared round.

Usage: ``.venv/bin/python bench/bench_blackjack_engine.py [--seats 10000] [--repeat 5]``

Each repetition plays rounds of the pure engine with ``--seats`` seats, every seat with a
main bet and side bets, from a seed-derived shoe: the deal, the insurance window when an
ace is up, every decision step (a third of the seats time out, the rest decide by a
simple total-based policy: split 8s and aces, double 10 and 11, hit below 17 else
stand, cash out 16s against a 10), the dealer and the settlement of every seat. It prints
the seats per second of the whole round and of the settlement alone (min / median / max
over the repetitions), wall and CPU time. Offers come from the published cash-out table
(``cashout-v1``, looked up by the rules). On a shared machine the wall clock also counts time
spent waiting for a core; the CPU figure does not.
"""

from __future__ import annotations

import argparse
import statistics
import time

from games.blackjack.decisions import Decision, DecisionKind
from games.blackjack.round import (
    close_insurance,
    close_step,
    deal,
    open_round,
    place_bets,
    play_dealer,
)
from games.blackjack.rules import DEFAULT_RULES
from games.blackjack.seat import Seat, decide, options
from games.blackjack.settlement import settle_seats
from games.blackjack.shared import Phase, SharedRound
from games.blackjack.shoe import Shoe, shoe_from_seed

K = DecisionKind
SIDES = {"perfect-pairs": 100, "21+3": 100, "hot-3": 100, "bust-it": 100}


CHOICES = {
    K.SPLIT: Decision(K.SPLIT),
    K.DOUBLE: Decision(K.DOUBLE),
    K.HIT: Decision(K.HIT),
    K.STAND: Decision(K.STAND),
    K.CASH_OUT: Decision(K.CASH_OUT),
}


def policy(shared: SharedRound, seat: Seat) -> Decision | None:
    offered = {o.kind for o in options(shared, seat)}
    if not offered:
        return None
    hand = seat.hands[seat.active]
    total = hand.total
    if K.SPLIT in offered and hand.cards[0].rank in (8, 14):
        return CHOICES[K.SPLIT]
    if K.DOUBLE in offered and total in (10, 11):
        return CHOICES[K.DOUBLE]
    if K.CASH_OUT in offered and total == 16 and shared.up_value == 10:
        return CHOICES[K.CASH_OUT]
    return CHOICES[K.HIT] if K.HIT in offered and total < 17 else CHOICES[K.STAND]


def one_round(shoe: Shoe, start: int, n: int) -> tuple[float, float, float, int]:
    """Play one round; return (round wall, round cpu, settle wall, next start)."""
    t0, c0 = time.perf_counter(), time.process_time()
    shared = open_round(DEFAULT_RULES, start)
    seats = [place_bets(shared, f"seat-{i}", 100 + i % 7 * 100, SIDES) for i in range(n)]
    shared, seats = deal(shared, seats, shoe)
    if shared.phase is Phase.INSURANCE:
        seats = [decide(shared, s, "no-insurance") if i % 3 else s for i, s in enumerate(seats)]
        shared, seats, _ = close_insurance(shared, seats, shoe)
    while shared.phase is Phase.STEP:
        for i, seat in enumerate(seats):
            if i % 3:  # every third seat lets its timer run out
                choice = policy(shared, seat)
                if choice is not None:
                    seats[i] = decide(shared, seat, choice)
        shared, seats, _ = close_step(shared, seats, shoe)
    if shared.phase is Phase.DEALER:
        shared = play_dealer(shared, shoe)
    s0 = time.perf_counter()
    settled = settle_seats(shared, seats)
    t1, c1 = time.perf_counter(), time.process_time()
    assert len(settled) == n
    return t1 - t0, c1 - c0, t1 - s0, shared.next_position


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seats", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per repetition")
    args = parser.parse_args()
    shoe = shoe_from_seed(DEFAULT_RULES, bytes(range(32)))
    whole, cpu_rate, settle = [], [], []
    start = 0
    for _ in range(args.repeat):
        wall = cpu = settle_wall = 0.0
        for _ in range(args.rounds):
            w, c, s, start = one_round(shoe, start, args.seats)
            wall, cpu, settle_wall = wall + w, cpu + c, settle_wall + s
            if start > shoe.cut_index:
                start = 0
        seats = args.seats * args.rounds
        whole.append(seats / wall)
        cpu_rate.append(seats / cpu)
        settle.append(seats / settle_wall)
    for label, rates in (
        ("whole round, wall", whole),
        ("whole round, cpu ", cpu_rate),
        ("settlement only  ", settle),
    ):
        print(
            f"{label}: min {min(rates):,.0f}  median {statistics.median(rates):,.0f}"
            f"  max {max(rates):,.0f} seats/s"
            f"  ({args.repeat} x {args.rounds} rounds of {args.seats:,} seats)"
        )


if __name__ == "__main__":
    main()
