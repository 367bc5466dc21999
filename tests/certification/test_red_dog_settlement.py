"""Red Dog certification (seed 003): exhaustive settlement against an independent
reference, and the exact RTP of games.red_dog.math against brute force."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from fractions import Fraction
from itertools import chain, combinations, product

import pytest

from games.red_dog import RedDogRules, deal, raise_bet, see, shuffled_deck
from games.red_dog.math import (
    SPREADS,
    analyse,
    as_percent,
    brute_force,
    no_raise,
    optimal,
    optimal_raise_spreads,
    raise_edge,
)

pytestmark = pytest.mark.slow

RANKS = range(2, 15)
BET = 4
RULES = RedDogRules(min_bet=1, max_bet=2 * BET)


def reference(first: int, second: int, third: int, bet: int, raised: int) -> tuple[str, int]:
    """Seed 003 written out again, as plainly as possible: (outcome, total returned)."""
    if abs(first - second) == 1:
        return "push-consecutive", bet
    if first == second:
        return ("three-of-a-kind", bet * 12) if third == first else ("push-pair", bet)
    low, high = min(first, second), max(first, second)
    spread = high - low - 1
    odds = {1: 5, 2: 4, 3: 2}.get(spread, 1)
    stake = bet + raised
    if low < third < high:
        return "win", stake * (odds + 1)
    return "lose", 0


def seeds_for_every_rank_triple() -> dict[tuple[int, int, int], bytes]:
    """A seed dealing each of the 13^3 ordered rank triples, from a fixed seed sequence."""
    found: dict[tuple[int, int, int], bytes] = {}
    for i in range(1_000_000):
        seed = hashlib.sha256(b"red-dog-certification/%d" % i).digest()
        a, b, c = shuffled_deck(seed)[:3]
        found.setdefault((a.rank.value, b.rank.value, c.rank.value), seed)
        if len(found) == 13**3:
            return found
    raise AssertionError(f"only {len(found)} rank triples found")


def test_every_deal_and_every_raise_settles_as_seed_003_says() -> None:
    checked = 0
    for (r1, r2, r3), seed in sorted(seeds_for_every_rank_triple().items()):
        deck = shuffled_deck(seed)
        state = deal(RULES, BET, seed)
        if r1 == r2 or abs(r1 - r2) == 1:
            outcome, payout = reference(r1, r2, r3, BET, 0)
            assert state.settled, (r1, r2, r3)
            assert (state.outcome, state.payout, state.staked) == (outcome, payout, BET)
            assert state.cards == tuple(deck[: 2 if abs(r1 - r2) == 1 else 3])
            checked += 1
            continue
        assert not state.settled and state.cards == tuple(deck[:2])
        assert state.spread == abs(r1 - r2) - 1
        for raised in range(BET + 1):
            done = raise_bet(state, raised, seed) if raised else see(state, seed)
            outcome, payout = reference(r1, r2, r3, BET, raised)
            got = (done.outcome, done.payout, done.staked, done.raise_amount)
            assert got == (outcome, payout, BET + raised, raised), (r1, r2, r3, raised)
            assert done.cards == tuple(deck[:3])
            assert done.net == payout - BET - raised
            checked += 1
    # 24 consecutive and 13 paired ordered rank pairs settle at the deal; the other 132
    # are played with every third rank and every raise 0..BET.
    assert checked == (24 + 13) * 13 + 132 * 13 * (BET + 1)


def reference_rtp(raise_spreads: frozenset[int]) -> tuple[Fraction, Fraction]:
    """(E[return], E[staked]) per unit bet over all ordered deals, counted by ranks with
    their card multiplicities (4 x 3 x 2 for three of a kind, and so on)."""
    total_return = total_staked = 0
    for r1, r2, r3 in product(RANKS, repeat=3):
        ways = 4 * (4 - (r2 == r1)) * (4 - (r3 == r1) - (r3 == r2))
        spread = abs(r1 - r2) - 1
        raised = 1 if r1 != r2 and spread in raise_spreads else 0
        _, payout = reference(r1, r2, r3, 1, raised)
        total_return += ways * payout
        total_staked += ways * (1 + raised)
    deals = 52 * 51 * 50
    return Fraction(total_return, deals), Fraction(total_staked, deals)


@pytest.mark.parametrize(
    "policy",
    [frozenset(), frozenset(range(7, 12)), frozenset(SPREADS)] + [frozenset({s}) for s in SPREADS],
)
def test_closed_form_rtp_equals_brute_force_over_all_ordered_deals(policy: frozenset[int]) -> None:
    closed = analyse(policy)
    assert brute_force(policy) == closed
    assert reference_rtp(policy) == (closed.expected_return, closed.expected_staked)
    assert sum(closed.outcomes.values()) == 1


def test_optimal_policy_raises_the_full_bet_on_spreads_seven_to_eleven() -> None:
    assert optimal_raise_spreads() == frozenset(range(7, 12))
    assert raise_edge(6) == Fraction(-1, 25)
    assert raise_edge(7) == Fraction(3, 25)
    all_policies = chain.from_iterable(combinations(SPREADS, k) for k in range(12))
    best = max(all_policies, key=lambda p: analyse(frozenset(p)).rtp_per_bet)
    assert frozenset(best) == optimal_raise_spreads()


def test_certified_rtp_figures() -> None:
    assert no_raise().rtp_per_bet == no_raise().rtp_per_staked == Fraction(15052, 16575)
    assert optimal().rtp_per_bet == Fraction(16052, 16575)
    assert optimal().rtp_per_staked == Fraction(19052, 19575)
    assert as_percent(no_raise().rtp_per_bet, 6) == Decimal("90.811463")
    assert as_percent(optimal().rtp_per_bet, 6) == Decimal("96.844646")
    assert as_percent(optimal().rtp_per_staked, 6) == Decimal("97.328225")


def test_published_96_84_is_the_optimal_raise_rtp_per_original_bet() -> None:
    # seed 003: "La percentuale teorica di ritorno (RTP) al giocatore è 96,84%".
    assert as_percent(optimal().rtp_per_bet, 2) == Decimal("96.84")
    assert as_percent(optimal().rtp_per_staked, 2) != Decimal("96.84")
    assert as_percent(no_raise().rtp_per_bet, 2) != Decimal("96.84")


def test_outcome_distribution() -> None:
    outcomes = {o.value: p for o, p in no_raise().outcomes.items()}
    assert outcomes == {
        "push-consecutive": Fraction(32, 221),
        "push-pair": Fraction(24, 425),
        "three-of-a-kind": Fraction(1, 425),
        "win": Fraction(352, 1275),
        "lose": Fraction(8624, 16575),
    }
    assert optimal().outcomes == no_raise().outcomes  # raising changes stakes, not cards
