"""Side-bet classification (seed 002): every outcome of every bet, and the readings stated
in games/blackjack/side_bets.py."""

from __future__ import annotations

import pytest

from games.blackjack.paytables import (
    DEFAULT_PAYTABLES,
    OUTCOMES,
    PAYTABLES,
    SideBet,
    SidePaytable,
)
from games.blackjack.rules import DEFAULT_RULES, Rules
from games.blackjack.side_bets import bust_it, hot_three, perfect_pairs, twenty_one_plus_three
from games.cards import parse_cards
from games.errors import InvalidRules


@pytest.mark.parametrize(
    ("cards", "outcome"),
    [
        ("As As", "perfect"),  # seed 002: "due Assi di Picche"
        ("2d 2h", "coloured"),  # seed 002: "2 di quadri + 2 di cuori"
        ("Qc Qs", "coloured"),  # clubs and spades are both black
        ("Th Tc", "mixed"),  # seed 002: "10 di cuori + 10 di fiori"
        ("Jh Qh", None),  # both count 10 but are not a pair of the same rank
        ("Kd 9d", None),
    ],
)
def test_perfect_pairs_needs_the_same_rank(cards: str, outcome: str | None) -> None:
    assert perfect_pairs(*parse_cards(cards)) == outcome


@pytest.mark.parametrize(
    ("cards", "outcome"),
    [
        ("Qh Qh Qh", "suited-trips"),  # seed 002: "3 Regine di Cuori"
        ("Ts Js Qs", "straight-flush"),  # seed 002: "10, jack e regina di picche"
        ("Kc Kd Kh", "trips"),
        ("Kc Kc Kh", "trips"),  # two suited, one not: plain trips
        ("2s 3c 4h", "straight"),  # seed 002: "2 di picche + 3 di fiori + 4 di cuori"
        ("Ah 2c 3d", "straight"),  # A-2-3: the ace plays low
        ("Qh Kc Ad", "straight"),  # Q-K-A: the ace plays high
        ("Ah 2h 3h", "straight-flush"),
        ("Kh 2c Ad", None),  # K-A-2 does not wrap
        ("2c 6c Tc", "flush"),  # seed 002: "2, 6 e 10 di fiori"
        ("2c 2c 3c", "flush"),  # a pair in one suit is a flush, not a straight
        ("9h Th Th", "flush"),
        ("9c Tc 9d", None),
    ],
)
def test_twenty_one_plus_three_outcomes(cards: str, outcome: str | None) -> None:
    assert twenty_one_plus_three(*parse_cards(cards)) == outcome


@pytest.mark.parametrize(
    ("cards", "outcome"),
    [
        ("7h 7c 7d", "777"),  # seed 002: "7 di Cuori, 7 di Fiori e 7 di Quadri"
        ("7h 7h 7h", "777"),  # 7-7-7 outranks a suited 21
        ("9d 2d Td", "suited-21"),  # seed 002's example
        ("9h 2d Ts", "21"),  # seed 002's example
        ("Ah Ah 9h", "suited-21"),  # A + A + 9: the best total is 21 (11 + 1 + 9)
        ("Ac Kd Qs", "21"),  # the ace counts 1: 21
        ("8h 2d Ts", "20"),  # seed 002's example
        ("8h 2d 9s", "19"),  # seed 002's example
        ("Ah 8c Qd", "19"),
        ("Ah 8c 4s", None),  # soft 13
        ("Kh Qc 5d", None),  # 25: over 21
        ("Kh 8c Qs", None),  # 28
        ("Kh 5c 3s", None),  # 18 does not pay
    ],
)
def test_hot_three_outcomes(cards: str, outcome: str | None) -> None:
    assert hot_three(*parse_cards(cards)) == outcome


@pytest.mark.parametrize(
    ("dealer", "outcome"),
    [
        ("Td 6c Kh", "3"),
        ("2c 3d 4h 5s 9c", "5"),
        ("2c 2d 3h 5s Kc", "5"),  # 22 with five cards
        ("Ac 6d Kh", None),  # soft 17 turned hard 17: no bust
        ("Ac 6d Kh 6s", "4"),
        ("2c 2d 2h 2s 3c 3d Kh", "7"),
        ("2c 2d 2h 2s Ac Ad 3h Kh", "8+"),
        ("Ac Ad Ah As 2c 2d 3h 2s Kc", "8+"),
        ("Td 7c", None),
        ("As Kd", None),
        ("4c 5d 3h Kh", "4"),
        ("2c 2d 2h 3s 3c Kh", "6"),
    ],
)
def test_bust_it_counts_the_dealer_cards_when_the_dealer_busts(
    dealer: str, outcome: str | None
) -> None:
    assert bust_it(parse_cards(dealer)) == outcome


def test_every_outcome_is_classified_somewhere() -> None:
    seen = {
        SideBet.PERFECT_PAIRS: {
            perfect_pairs(*parse_cards(c)) for c in ("As As", "2d 2h", "Th Tc")
        },
        SideBet.TWENTY_ONE_PLUS_THREE: {
            twenty_one_plus_three(*parse_cards(c))
            for c in ("Qh Qh Qh", "Ts Js Qs", "Kc Kd Kh", "2s 3c 4h", "2c 6c Tc")
        },
        SideBet.HOT_THREE: {
            hot_three(*parse_cards(c))
            for c in ("7h 7c 7d", "9d 2d Td", "9h 2d Ts", "8h 2d Ts", "8h 2d 9s")
        },
        SideBet.BUST_IT: {
            bust_it(parse_cards(c))
            for c in (
                "Td 6c Kh",
                "4c 5d 3h Kh",
                "2c 3d 4h 5s 9c",
                "2c 2d 2h 3s 3c Kh",
                "2c 2d 2h 2s 3c 3d Kh",
                "2c 2d 2h 2s Ac Ad 3h Kh",
            )
        },
    }
    for bet, outcomes in seen.items():
        assert outcomes == set(OUTCOMES[bet]), bet


def test_paytables_are_seed_002s() -> None:
    assert dict(PAYTABLES["perfect-pairs-25-12-6"].pays) == {
        "perfect": 25,
        "coloured": 12,
        "mixed": 6,
    }
    assert dict(PAYTABLES["21+3-100-40-30-10-5"].pays) == {
        "suited-trips": 100,
        "straight-flush": 40,
        "trips": 30,
        "straight": 10,
        "flush": 5,
    }
    assert dict(PAYTABLES["hot-3-100-20-4-2-1"].pays) == {
        "777": 100,
        "suited-21": 20,
        "21": 4,
        "20": 2,
        "19": 1,
    }
    assert dict(PAYTABLES["bust-it-1-2-9-50-100-250"].pays) == {
        "8+": 250,
        "7": 100,
        "6": 50,
        "5": 9,
        "4": 2,
        "3": 1,
    }
    for bet in SideBet:
        assert DEFAULT_RULES.side_paytable(bet) is DEFAULT_PAYTABLES[bet]


def test_a_paytable_pays_stake_plus_stake_times_the_odds() -> None:
    table = DEFAULT_PAYTABLES[SideBet.PERFECT_PAIRS]
    assert table.payout("perfect", 100) == 2600
    assert table.payout(None, 100) == 0


def test_a_malformed_paytable_is_refused() -> None:
    with pytest.raises(InvalidRules):
        SidePaytable("x", SideBet.PERFECT_PAIRS, {"perfect": 25, "coloured": 12})
    with pytest.raises(InvalidRules):
        SidePaytable("x", SideBet.PERFECT_PAIRS, {"perfect": 25, "coloured": 12, "mixed": 0})
    with pytest.raises(InvalidRules):
        Rules(hot_three_paytable="perfect-pairs-25-12-6")
    with pytest.raises(InvalidRules):
        Rules(min_bet=500, max_bet=100)
