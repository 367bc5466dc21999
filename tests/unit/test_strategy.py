"""Recommended holds: exact EVs equal brute-force enumeration of every draw.

The golden vectors in ``tests/fixtures/video_poker_holds.csv`` were produced by this
module's brute force (run ``python -m tests.unit.test_strategy`` to print them again).
"""

from __future__ import annotations

import csv
import random
import sys
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from games.cards import Card, full_deck, parse_cards
from games.poker import HAND_RANKS, InvalidHand, rank_code
from games.video_poker.paytable import JACKS_OR_BETTER_9_6, PAYTABLES, Paytable
from games.video_poker.strategy import (
    SCALE,
    choose_batch,
    final_counts_batch,
    hold_evs,
    optimal_hold,
    scale_counts,
    winning_cards_hold,
)

GOLDEN = Path(__file__).parents[1] / "fixtures" / "video_poker_holds.csv"
JB = JACKS_OR_BETTER_9_6


# -- the reference: enumerate every draw -----------------------------------------------


def brute_force_counts(hand: Sequence[Card], hold: Sequence[int]) -> list[int]:
    """Final-hand counts by rank over every draw from the 47 undealt cards."""
    dealt = {card.id for card in hand}
    stub = [c for c in range(52) if c not in dealt]
    kept = [hand[p].id for p in hold]
    counts = [0] * len(HAND_RANKS)
    for draw in combinations(stub, 5 - len(kept)):
        counts[rank_code(*kept, *draw)] += 1
    return counts


def brute_force_ev(
    hand: Sequence[Card], hold: Sequence[int], paytable: Paytable, coins: int
) -> Fraction:
    counts = brute_force_counts(hand, hold)
    pays = [paytable.payout(r, coins) for r in HAND_RANKS]
    return Fraction(sum(n * p for n, p in zip(counts, pays, strict=True)), sum(counts))


def brute_force_best(
    hand: Sequence[Card], paytable: Paytable, coins: int
) -> tuple[tuple[int, ...], Fraction]:
    """Max EV over the 32 holds, with the documented tie-break (more cards, then the
    better outcome profile from the royal down, then the lower position bitmask)."""
    best: tuple[object, ...] = ()
    choice: tuple[tuple[int, ...], Fraction] = ((), Fraction(0))
    for mask in range(32):
        hold = tuple(p for p in range(5) if mask >> p & 1)
        counts = brute_force_counts(hand, hold)
        total = sum(counts)
        ev = Fraction(
            sum(n * paytable.payout(r, coins) for r, n in zip(HAND_RANKS, counts, strict=True)),
            total,
        )
        profile = tuple(Fraction(n, total) for n in reversed(counts))
        key = (ev, len(hold), *profile, -mask)
        if key > best:
            best, choice = key, (hold, ev)
    return choice


# -- exact EVs vs brute force ----------------------------------------------------------

SAMPLE_HANDS = [
    "Ah Kh Qh Jh 2c",  # four to a royal
    "Jc Jd 2h 5s 9c",  # a high pair
    "2h 2c 7h 9h Kh",  # four to a flush with a low pair
    "5c 6d 7h 8s Kd",  # four to an outside straight
    "Qs Ks 2s 9d Ad",  # two to a royal vs three to a flush
    "Kc Kd 7h 7s 2c",  # two pair
]


@pytest.mark.parametrize("text", SAMPLE_HANDS)
def test_evs_of_holds_of_two_or_more_cards_equal_brute_force(text: str) -> None:
    hand = parse_cards(text)
    evs = hold_evs(hand, JB, 5)
    for hold, ev in evs.items():
        if len(hold) >= 2:
            assert ev == brute_force_ev(hand, hold, JB, 5), hold


@pytest.mark.slow
@pytest.mark.parametrize("text", ["2c 7d 9h 4s 3c", "Qs Ks 2s 9d Ad"])
def test_evs_of_holding_one_card_or_none_equal_brute_force(text: str) -> None:
    hand = parse_cards(text)
    evs = hold_evs(hand, JB, 1)
    for hold, ev in evs.items():
        if len(hold) <= 1:
            assert ev == brute_force_ev(hand, hold, JB, 1), hold


def test_hold_evs_covers_all_32_holds() -> None:
    evs = hold_evs(parse_cards("2c 7d 9h 4s 3c"), JB, 5)
    assert len(evs) == 32
    assert set(evs) == {tuple(p for p in range(5) if m >> p & 1) for m in range(32)}


def test_optimal_hold_is_the_max_of_hold_evs() -> None:
    rng = random.Random(2024)
    for _ in range(200):
        hand = rng.sample(full_deck(), 5)
        coins = rng.randint(1, 5)
        evs = hold_evs(hand, JB, coins)
        advice = optimal_hold(hand, JB, coins)
        assert advice.ev == max(evs.values())
        assert evs[advice.hold] == advice.ev


# -- golden vectors ----------------------------------------------------------------------


def golden_rows() -> list[dict[str, str]]:
    lines = [line for line in GOLDEN.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


@pytest.mark.parametrize("row", golden_rows(), ids=lambda r: f"{r['hand']}/{r['coins']}")
def test_golden_vectors(row: dict[str, str]) -> None:
    hand = parse_cards(row["hand"])
    advice = optimal_hold(hand, PAYTABLES[row["paytable"]], int(row["coins"]))
    assert advice.hold == tuple(int(p) for p in row["hold"].split())
    assert " ".join(str(hand[p]) for p in advice.hold) == row["held"]
    assert advice.ev == Fraction(row["ev"])


@pytest.mark.slow
def test_golden_vectors_recomputed_by_brute_force() -> None:
    for row in golden_rows()[:2]:
        hand = parse_cards(row["hand"])
        hold, ev = brute_force_best(hand, PAYTABLES[row["paytable"]], int(row["coins"]))
        assert hold == tuple(int(p) for p in row["hold"].split())
        assert ev == Fraction(row["ev"])


def test_well_known_strategy_facts() -> None:
    # Four to a royal beats a made high pair (and a made flush is broken only for 4-RF).
    assert optimal_hold(parse_cards("Th Jh Qh Kh Kc"), JB, 5).hold == (0, 1, 2, 3)
    # A made straight flush is kept rather than drawing to the royal.
    assert optimal_hold(parse_cards("9s Ts Js Qs Ks"), JB, 5).hold == (0, 1, 2, 3, 4)
    # A high pair beats three to a royal.
    assert optimal_hold(parse_cards("Ah Kh Qh Ac 5d"), JB, 5).hold == (0, 3)
    # With nothing to keep, draw five.
    assert optimal_hold(parse_cards("2c 7d 9h 4s 3c"), JB, 5).hold == ()


def test_royal_draws_matter_more_with_five_coins() -> None:
    # 800 per coin (5 coins) favours two to a royal over three to a flush; 250 does not.
    hand = parse_cards("Qs Ks 2s 9d Ad")
    assert optimal_hold(hand, JB, 5).hold == (0, 1)
    assert optimal_hold(hand, JB, 1).hold == (0, 1, 2)


# -- tie-break ---------------------------------------------------------------------------


def test_tie_between_keeping_quads_and_the_kicker_keeps_all_five() -> None:
    hand = parse_cards("9d 9h 9s 9c Qc")
    evs = hold_evs(hand, JB, 5)
    assert evs[(0, 1, 2, 3)] == evs[(0, 1, 2, 3, 4)] == 125
    assert optimal_hold(hand, JB, 5).hold == (0, 1, 2, 3, 4)


def test_tie_between_equivalent_cards_takes_the_lowest_positions() -> None:
    # Either ten completes K-Q-J-T; the draws are identical, so the lower positions win.
    hand = parse_cards("Th Td Qh Js Kc")
    evs = hold_evs(hand, JB, 5)
    assert evs[(0, 2, 3, 4)] == evs[(1, 2, 3, 4)]
    assert optimal_hold(hand, JB, 5).hold == (0, 2, 3, 4)


def test_renaming_suits_and_reordering_cards_keeps_the_ev() -> None:
    rng = random.Random(7)
    for _ in range(100):
        hand = rng.sample(full_deck(), 5)
        suits = "cdhs"
        renamed = dict(zip(suits, rng.sample(suits, 4), strict=True))
        other = [Card.parse(str(c)[0] + renamed[c.suit.value]) for c in hand]
        order = rng.sample(range(5), 5)
        other = [other[p] for p in order]
        a, b = optimal_hold(hand, JB, 5), optimal_hold(other, JB, 5)
        assert a.ev == b.ev
        assert len(a.hold) == len(b.hold)


def test_batch_path_used_by_the_maths_picks_holds_of_the_same_ev() -> None:
    rng = random.Random(11)
    hands = [sorted(rng.sample(range(52), 5)) for _ in range(300)]
    columns = [np.array([h[j] for h in hands], dtype=np.int8) for j in range(5)]
    scaled = scale_counts(final_counts_batch(columns))
    pays = np.array([JB.payout(r, 5) for r in HAND_RANKS], dtype=np.float64)
    best = choose_batch(scaled, scaled @ pays)
    for i, ids in enumerate(hands):
        hand = [Card.from_id(c) for c in ids]
        mask = int(best[i])
        advice = optimal_hold(hand, JB, 5)
        assert Fraction(int(scaled[mask, i] @ pays.astype(np.int64)), SCALE) == advice.ev
        assert tuple(p for p in range(5) if mask >> p & 1) == advice.hold


# -- seed 000's proposal -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hold"),
    [
        ("Jc 2h Jd 5s 9c", (0, 2)),  # jacks or better: the pair
        ("Tc Td 2h 5s 9c", ()),  # a low pair does not pay: nothing held
        ("Kc Kd 7h 7s 2c", (0, 1, 2, 3)),  # two pair: both pairs
        ("2c 9d 2h 2s Ac", (0, 2, 3)),  # trips
        ("5c 5d 5h 5s Ac", (0, 1, 2, 3)),  # quads: the four
        ("Qs Qd 7c 7h Qh", (0, 1, 2, 3, 4)),  # full house
        ("Ah 2c 3d 4s 5h", (0, 1, 2, 3, 4)),  # straight
        ("2h 7h 9h Jh Kh", (0, 1, 2, 3, 4)),  # flush
        ("Ah Kh Qh Jh 2c", ()),  # four to a royal pays nothing yet
    ],
)
def test_winning_cards_proposal_holds_the_paying_cards(text: str, hold: tuple[int, ...]) -> None:
    assert winning_cards_hold(parse_cards(text)) == hold


def test_bad_hands_are_refused() -> None:
    with pytest.raises(InvalidHand):
        optimal_hold(parse_cards("Ah Kh Qh Jh"), JB, 5)
    with pytest.raises(InvalidHand):
        winning_cards_hold(parse_cards("Ah Ah Qh Jh Th"))
    with pytest.raises(ValueError, match="coins"):
        optimal_hold(parse_cards("Ah Kh Qh Jh Th"), JB, 6)


# -- regenerating the golden vectors -----------------------------------------------------

GOLDEN_HANDS = [
    ("Ah Kh Qh Jh 2c", 5, "four to a royal"),
    ("Jc Jd 2h 5s 9c", 5, "a high pair"),
    ("2c 7d 9h 4s 3c", 5, "nothing to keep: draw five"),
    ("Qh Jd 5c 7s 2h", 5, "two unsuited high cards"),
    ("Th Jh Qh Kh Kc", 5, "four to a royal beats a high pair"),
    ("Ah Kh Qh Ac 5d", 5, "a high pair beats three to a royal"),
    ("2h 2c 7h 9h Kh", 5, "four to a flush beats a low pair"),
    ("5c 6d 7h 8s Kd", 5, "four to an outside straight"),
    ("Th Td Qh Js Kc", 5, "K-Q-J-T beats a low pair; tie between the tens"),
    ("Qs Ks 2s 9d Ad", 5, "two to a royal (800 per coin)"),
    ("Qs Ks 2s 9d Ad", 1, "three to a flush (250 per coin)"),
    ("6h Kd Td 9d Ad", 5, "three to a royal (800 per coin)"),
    ("6h Kd Td 9d Ad", 1, "four to a flush (250 per coin)"),
    ("9s Ts Js Qs Ks", 5, "a made straight flush"),
    ("Kc Kd 7h 7s 2c", 5, "two pair"),
    ("9d 9h 9s 9c Qc", 5, "quads: tie with the kicker, all five kept"),
]


def _print_golden() -> None:  # pragma: no cover - run by hand
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["hand", "paytable", "coins", "hold", "held", "ev", "ev_per_coin", "note"])
    for text, coins, note in GOLDEN_HANDS:
        hand = parse_cards(text)
        hold, ev = brute_force_best(hand, JB, coins)
        held = " ".join(str(hand[p]) for p in hold)
        positions = " ".join(map(str, hold))
        out.writerow([text, JB.id, coins, positions, held, ev, f"{float(ev / coins):.6f}", note])


if __name__ == "__main__":
    _print_golden()
