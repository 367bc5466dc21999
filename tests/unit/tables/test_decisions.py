"""Decisions at the live table, handler by handler on an in-memory store: hit, stand,
double (funded or not), split, insurance, cash-out (credited at once), and every refusal
with its typed error, changing nothing. Cards are dealt in seed 002's order: the player's
first card, the dealer's up card, the player's second, the hole card; then one card per
decision step; then the dealer's draws."""

from __future__ import annotations

from games.blackjack.errors import AlreadyDecided, NotAnOption
from games.errors import InvalidDecision
from ledger.tables import commands as tc
from ledger.tables.errors import NotSeated, StepClosed
from tests.unit.tables.desk import Desk

ELEVEN = "5s 7h 6d Tc Ks 9c 9d 9h"  # 5 6 against a 7 (hole T: 17); step 1 deals a K
SEVENTEEN = "Ts 9h 7d Kc 2c 3c 4c 5c"  # T 7 against a 9 (hole K: 19)
EIGHTS = "8s 9h 8d Kc 3s 2c Td 4c"  # a pair of 8s against a 9 (hole K)
ACE_UP = "Ts Ah 9d 6c 2c 3c 4c 5c"  # T 9 against an ace (hole 6: no blackjack, soft 17)
ACE_UP_BLACKJACK = "Ts Ah 9d Kc 2c 3c 4c 5c"  # the dealer peeks a blackjack


def dealt(cards: str, *buy_ins: int, main: int = 1_000) -> tuple[Desk, list[str]]:
    """A desk whose first round is dealt to one seat per buy-in, each betting ``main``."""
    desk = Desk(cards)
    players = [desk.player(f"p{i}", b) for i, b in enumerate(buy_ins or (20_000,))]
    desk.open()
    for p in players:
        desk.bet(p, "main", main)
    desk.later(10_000)
    desk.advance("deal")
    return desk, players


def finish(desk: Desk) -> None:
    """Close what is open at its deadline, play the dealer, settle every batch, finish."""
    for _ in range(10):
        rnd = desk.round()
        if rnd.phase in ("insurance", "step"):
            desk.later(5_000)
            desk.advance(rnd.phase, rnd.step if rnd.phase == "step" else 0)
        elif rnd.phase == "dealer":
            desk.advance("dealer")
        elif rnd.phase == "settling":
            for b in range(-(-len(rnd.seats) // 2)):
                desk.advance("settle-batch", b)
            desk.advance("settle")
            return
    raise AssertionError(f"the round did not finish: {desk.round().phase}")


def test_hit_draws_the_steps_card_and_a_win_pays_even_money() -> None:
    desk, [ann] = dealt(ELEVEN)
    assert desk.options(ann) == ["hit", "stand", "double", "cash-out"]
    out = desk.decide(ann, 1, "hit")
    assert out.applied == "hit" and not out.automatic
    desk.advance("step", 1, early=True)  # nobody is left to decide: it closes at once
    assert desk.round().step_cards == ["Ks"]
    assert desk.options(ann) == []  # 21: no decision (seed 002)
    finish(desk)
    seat = desk.seat(ann)
    assert seat.status == "settled" and seat.result["hands"] == [["win", 1_000, 2_000]]
    assert desk.balance(ann) == 21_000


def test_stand_keeps_the_hand_and_the_dealer_decides() -> None:
    desk, [ann] = dealt(SEVENTEEN)
    desk.decide(ann, 1, "stand")
    finish(desk)
    assert desk.seat(ann).result["hands"] == [["lose", 1_000, 0]]
    assert desk.balance(ann) == 19_000


def test_double_stakes_the_main_bet_again_for_one_card() -> None:
    desk, [ann] = dealt(ELEVEN)
    out = desk.decide(ann, 1, "double")
    assert out.applied == "double" and out.balance == 18_000
    assert desk.seat(ann).debited == 2_000
    finish(desk)
    assert desk.seat(ann).result["hands"] == [["win", 2_000, 4_000]]
    assert desk.balance(ann) == 22_000


def test_an_unfunded_double_is_a_hit_with_the_reason_recorded() -> None:
    """seed 002: when the balance does not cover a requested double, the hand hits."""
    desk, [ann] = dealt(ELEVEN, 1_000)
    out = desk.decide(ann, 1, "double")
    assert out.applied == "hit" and out.balance == 0
    kind, requested, reason = desk.seat(ann).decisions["1"][:3]
    assert (kind, requested) == ("hit", "double") and reason
    finish(desk)
    assert desk.seat(ann).result["hands"] == [["win", 1_000, 2_000]]


def test_split_makes_two_hands_each_staked_at_the_main_bet() -> None:
    desk, [ann] = dealt(EIGHTS)
    assert "split" in desk.options(ann)
    out = desk.decide(ann, 1, "split")
    assert out.applied == "split" and out.balance == 18_000
    finish(desk)  # hand 1: 8 3, hits on 11 at the timeout (2), stands; hand 2: 8 T
    seat = desk.seat(ann)
    assert desk.round().step_cards == ["3s", "2c", "Td"]
    assert seat.result["hands"] == [["lose", 1_000, 0], ["lose", 1_000, 0]]  # the dealer's 19
    assert seat.result["staked"] == 2_000 and desk.balance(ann) == 18_000


def test_insurance_costs_half_the_bet_and_is_lost_without_a_dealer_blackjack() -> None:
    desk, [ann] = dealt(ACE_UP)
    rnd = desk.round()
    assert rnd.phase == "insurance" and rnd.step == 0
    assert desk.options(ann) == ["insure", "no-insurance"]
    out = desk.decide(ann, 0, "insure")
    assert out.applied == "insure" and out.balance == 18_500
    desk.advance("insurance", early=True)
    assert desk.round().phase == "step"  # no blackjack under the ace: play on
    desk.decide(ann, 1, "stand")
    finish(desk)
    seat = desk.seat(ann)
    assert seat.result["insurance"] == 0 and seat.result["staked"] == 1_500
    assert seat.result["hands"] == [["win", 1_000, 2_000]]  # 19 against a soft 17
    assert desk.balance(ann) == 20_500


def test_insurance_pays_two_to_one_on_a_dealer_blackjack() -> None:
    desk, [ann, bob] = dealt(ACE_UP_BLACKJACK, 20_000, 20_000)
    desk.decide(ann, 0, "insure")
    desk.decide(bob, 0, "no-insurance")
    desk.advance("insurance", early=True)
    rnd = desk.round()
    assert rnd.phase == "settling" and rnd.hole == "Kc"  # the peek ends the round
    finish(desk)
    assert desk.seat(ann).result["insurance"] == 1_500  # 500 back and 2:1
    assert desk.balance(ann) == 20_000  # the main bet lost: even money, in effect
    assert desk.balance(bob) == 19_000


def test_cash_out_is_credited_at_once_and_ends_the_hand() -> None:
    desk, [ann] = dealt(SEVENTEEN)
    [offer] = [a for d, a in _offered(desk, ann) if d == "cash-out"]
    assert 400 <= offer <= 1_770  # 0.40-1.77 x the bet (seed 002)
    out = desk.decide(ann, 1, "cash-out")
    assert out.applied == "cash-out" and out.balance == 19_000 + offer
    assert desk.seat(ann).credited == offer
    assert desk.options(ann) == []
    finish(desk)
    assert desk.balance(ann) == 19_000 + offer  # the settlement pays nothing more


def _offered(desk: Desk, sid: str) -> list[tuple[str, int]]:
    from ledger.unit_of_work import UnitOfWork

    uow = UnitOfWork(desk.store.find, {})
    return [(str(k), int(a)) for k, a in desk.players.offered(uow, "T1", sid)]


def test_a_decision_out_of_turn_is_refused_and_changes_nothing() -> None:
    desk, [ann] = dealt(ELEVEN)
    decide = desk.handle
    for step, decision, error in [
        (2, "hit", StepClosed),  # step 2 is not open
        (0, "insure", StepClosed),  # no insurance window (a 7 up)
        (1, "split", NotAnOption),  # not a pair
        (1, "fly", InvalidDecision),
    ]:
        desk.refused(error, decide, tc.TableDecide(ann, "T1", step, decision))
    desk.decide(ann, 1, "stand")
    desk.refused(AlreadyDecided, decide, tc.TableDecide(ann, "T1", 1, "hit"))


def test_no_decision_without_a_dealt_seat_or_after_the_steps_deadline() -> None:
    desk, [ann] = dealt(ELEVEN)
    bob = desk.player("bob")
    err = desk.refused(NotSeated, desk.handle, tc.TableDecide(bob, "T1", 1, "hit"))
    assert err.code == "not-seated"
    desk.later(5_000)  # the step's deadline: the runner has not closed it yet
    desk.refused(StepClosed, desk.handle, tc.TableDecide(ann, "T1", 1, "hit"))


def test_no_decision_while_betting_or_paused() -> None:
    desk = Desk(ELEVEN)
    ann = desk.player()
    desk.open()
    desk.bet(ann, "main", 1_000)
    desk.refused(StepClosed, desk.handle, tc.TableDecide(ann, "T1", 1, "hit"))
    desk.later(10_000)
    desk.advance("deal")
    desk.run(desk.handle, tc.PauseTable("T1", "card reader"))
    desk.refused(StepClosed, desk.handle, tc.TableDecide(ann, "T1", 1, "hit"))


def test_an_unfunded_split_of_16_stands() -> None:
    """seed 002: a requested split the balance does not cover hits on 11 or less, else
    stands (8 8 is 16)."""
    desk, [ann] = dealt(EIGHTS, 1_000)
    out = desk.decide(ann, 1, "split")
    assert out.applied == "stand" and out.balance == 0
    assert desk.seat(ann).decisions["1"][:2] == ["stand", "split"]


def test_an_unfunded_insurance_is_declined() -> None:
    desk, [ann] = dealt(ACE_UP, 1_000)
    out = desk.decide(ann, 0, "insure")
    assert out.balance == 0 and out.applied == "no-insurance"
    finish(desk)
    assert desk.seat(ann).result["staked"] == 1_000
