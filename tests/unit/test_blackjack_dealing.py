"""The shoe and the shared dealing of DESIGN §5.3: every seat shares the initial cards and
the step cards, draws them in shoe order, and no state reaches a card not yet shown."""

from __future__ import annotations

import gc
from collections import Counter
from types import FunctionType, ModuleType

import pytest

from games.blackjack.round import (
    close_insurance,
    close_step,
    deal,
    next_start,
    open_round,
    place_bets,
)
from games.blackjack.rules import DEFAULT_RULES, Rules
from games.blackjack.shoe import CUT_LABEL, SHOE_LABEL, Shoe, shoe_from_seed
from games.cards import Card, full_deck, parse_cards
from games.errors import InvalidRules
from games.rng import RandomStream
from tests.unit.blackjack_support import FAKE_CASHOUT, Table


def reachable_cards(*roots: object) -> set[Card]:
    """Every Card value reachable from ``roots`` through any reference (attributes, slots,
    containers, closures), not through modules, classes or functions."""
    seen: set[int] = set()
    found: set[Card] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | ModuleType | FunctionType):
            continue
        seen.add(id(obj))
        if isinstance(obj, Card):
            found.add(obj)
        stack.extend(gc.get_referents(obj))
    return found


# --- shoe -------------------------------------------------------------------------------


def test_a_shoe_is_eight_decks_shuffled() -> None:
    shoe = shoe_from_seed(DEFAULT_RULES, bytes(32))
    assert Counter(shoe) == Counter(full_deck() * 8)
    assert list(shoe) != list(full_deck() * 8)


def test_the_shoe_is_fisher_yates_on_its_labelled_stream_from_the_shoe_seed() -> None:
    seed = bytes([7]) * 32
    shoe = shoe_from_seed(DEFAULT_RULES, seed)
    assert list(shoe) == RandomStream(seed, SHOE_LABEL).shuffled(full_deck() * 8)
    assert shoe.cut_index == 312 + RandomStream(seed, CUT_LABEL).randbelow(42)
    # golden vector: a change of the derivation must be deliberate
    assert [str(c) for c in shoe[:8]] == ["6d", "2s", "3d", "4d", "Jc", "Kh", "As", "Kh"]
    assert shoe.cut_index == 349


def test_the_cut_card_lies_between_75_and_85_percent_of_the_shoe() -> None:
    cuts = {shoe_from_seed(DEFAULT_RULES, bytes([i]) * 32).cut_index for i in range(120)}
    assert min(cuts) >= 312 and max(cuts) <= 353  # ceil(0.75 * 416), floor(0.85 * 416)
    assert len(cuts) > 20  # drawn from the shoe's stream, not fixed


def test_the_penetration_is_a_table_setting() -> None:
    rules = Rules(penetration_min_permille=500, penetration_max_permille=500)
    assert shoe_from_seed(rules, bytes(32)).cut_index == 208
    with pytest.raises(InvalidRules):
        Rules(penetration_min_permille=900, penetration_max_permille=800)


def test_the_round_that_takes_the_cut_card_finishes_then_the_shoe_is_done() -> None:
    before = Table("Tc 9h 6d 8s 5c", cut_index=4)
    assert not before.shared.cut_out
    before.finish()
    assert next_start(before.shared) == 4  # the dealer stood: card 4 never came out
    taken = Table("Tc 9h 6d 7s 5c", cut_index=4)
    result = taken.finish()["a"]
    assert taken.dealer() == "9h 7s 5c" and taken.shared.cut_out
    assert next_start(taken.shared) is None and result.returned == 0  # the round finished


def test_rounds_follow_each_other_in_the_shoe_without_a_burn_card() -> None:
    first = Table("Tc 9h 6d 8s 5c 4d 7h Kc")
    first.finish()
    start = next_start(first.shared)
    assert start == 4
    second = Table("Tc 9h 6d 8s 5c 4d 7h Kc", start=start)
    assert [str(c) for c in second.shared.player_cards] == ["5c", "7h"]
    assert str(second.shared.up) == "4d"


# --- shared dealing ---------------------------------------------------------------------


def test_the_initial_cards_are_dealt_player_up_player_hole() -> None:
    t = Table("2c 3d 4h 5s 6c Tc")
    assert [str(c) for c in t.shared.player_cards] == ["2c", "4h"]
    assert str(t.shared.up) == "3d" and t.shared.hole is None
    t.finish()
    assert str(t.shared.hole) == "5s"


def test_two_seats_with_different_decisions_see_the_same_initial_and_step_cards() -> None:
    t = Table("5c 9h 4d 6s 2c 3h 4s 9c", bets={"a": 100, "b": 300})
    t.decide("hit", "a").decide("hit", "b").close()
    t.decide("hit", "a").decide("stand", "b").close()
    t.decide("stand", "a").close()
    assert t.cards("a") == "5c 4d 2c 3h"
    assert t.cards("b") == "5c 4d 2c"
    t.finish()
    assert t.dealer() == "9h 6s 4s"  # the steps took 2c and 3h; the dealer goes on from 4s


def test_a_seats_kth_drawn_card_is_the_kth_card_after_the_initial_four() -> None:
    cards = "8c 9h 8d 7s 2c 3h 4s 5d 6c Tc Kd"
    t = Table(cards, bets={"a": 100, "b": 100})
    t.decide("split", "a").decide("hit", "b").close()  # step 1: 2c to both
    t.decide("hit", "a").decide("stand", "b").close()  # step 2: 3h to a; b stands on 18
    t.decide("stand", "a").close()  # step 3: a's second hand takes 4s
    t.finish()
    after_initial = parse_cards(cards)[4:]
    for sid in ("a", "b"):
        drawn = t.seat(sid).drawn_cards()
        assert drawn == after_initial[: len(drawn)], sid
    assert t.cards("a", 0) == "8c 2c 3h" and t.cards("a", 1) == "8d 4s"


def test_standing_on_the_first_hand_lets_the_second_take_its_card_in_the_same_step() -> None:
    t = Table("8c 9h 8d 7s 2c 3h 9c Tc").play("split")
    assert t.cards(hand=0) == "8c 2c"
    t.play("stand")
    assert t.cards(hand=1) == "8d 3h"  # the step-2 card, in the step hand 1 stood
    assert t.closed[-1].card == parse_cards("3h")[0]  # type: ignore[attr-defined]


def test_split_aces_take_their_card_in_consecutive_steps() -> None:
    t = Table("Ac 9h Ad 8s 5c 6d 9c").play("split")
    assert [c.card for c in t.closed] == list(parse_cards("5c"))  # type: ignore[attr-defined]
    t.close()
    assert [c.card for c in t.closed] == list(parse_cards("5c 6d"))  # type: ignore[attr-defined]


def test_a_seat_draws_at_most_one_card_per_step() -> None:
    t = Table("8c 9h 8d 7s 2c 3h 9c Tc").play("split")
    assert len(t.seat().drawn_cards()) == 1
    t.play("stand")
    assert len(t.seat().drawn_cards()) == 2


def test_no_step_card_is_visible_before_its_step_closes() -> None:
    marker = parse_cards("Ks")[0]
    t = Table("5c 9h 4d 8s 2c Ks 3d 2h", bets={"a": 100, "b": 100})
    t.decide("hit", "a").close()  # step 1 shows 2c; step 2 would show the Ks
    t.decide("hit", "a")
    states = (t.shared, *t.seats.values())
    assert parse_cards("2c")[0] in reachable_cards(*states)  # the walker sees shown cards
    assert marker not in reachable_cards(*states)
    t.close()
    assert marker in reachable_cards(t.shared, *t.seats.values())


def test_the_hole_card_is_not_visible_until_the_dealer_shows_it() -> None:
    hole = parse_cards("7s")[0]
    shoe = Shoe.of("5c Ah 4d 7s 9c 2h")
    shared = open_round(DEFAULT_RULES, 0, FAKE_CASHOUT)
    seats = [place_bets(shared, "a", 100)]
    shared, seats = deal(shared, seats, shoe)
    assert hole not in reachable_cards(shared, *seats)
    shared, seats, _ = close_insurance(shared, seats, shoe)  # the peek: no blackjack
    assert hole not in reachable_cards(shared, *seats)
    shared, seats, _ = close_step(shared, seats, shoe)  # 9: timeout hits
    assert hole not in reachable_cards(shared, *seats)
