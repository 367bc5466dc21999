"""The runner's actions (one command each), handler by handler on an in-memory store: open,
deal, the timeout's automatic decisions (seed 002: a total of 11 or less hits, more
stands; an unanswered insurance declines), an early close, the dealer, settlement in
batches and the finish, a round that waits for a first bet, and the operator's pause and
void; an action not due or stale is refused and changes nothing."""

from __future__ import annotations

from datetime import datetime

from games.blackjack import Phase
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableSeat, seat_id_for
from ledger.tables.errors import NotDue, Stale, StepClosed
from tests.unit.tables.desk import T0, Desk
from tests.unit.tables.test_decisions import ACE_UP, ELEVEN, SEVENTEEN, dealt, finish


def test_open_starts_a_shoe_and_a_round_with_its_betting_deadline() -> None:
    desk = Desk(SEVENTEEN)
    out = desk.open()
    rnd = desk.round()
    assert out == tc.RoundOpened(round=1, code=rnd.code, phase=Phase.BETTING)
    assert rnd.code.startswith("IBJ-20261201-120000-")  # the GMT start time (seed 002)
    assert datetime.fromisoformat(rnd.deadline or "") == T0.replace(second=10)
    assert desk.table().shoes == 1 and rnd.start == 0
    desk.refused(Stale, desk.handle, desk.step("open", 0, number=1))


def _at(desk: Desk) -> str:
    return desk.now.isoformat(timespec="milliseconds")


def test_the_deal_waits_for_the_deadline_then_deals_the_seats_that_bet() -> None:
    desk = Desk(SEVENTEEN)
    ann, bob = desk.player("ann"), desk.player("bob")
    desk.open()
    desk.bet(ann)
    deal = desk.step("deal", 0, number=1)
    desk.refused(NotDue, desk.handle, deal)
    desk.later(10_000)
    desk.refused(Stale, desk.handle, desk.step("deal", 0, number=2))
    desk.refused(Stale, desk.handle, desk.step("step", 1, number=1))
    assert desk.advance("deal") == tc.RoundDealt(round=1, phase=Phase.STEP, seats=1)
    rnd = desk.round()
    assert rnd.player_cards == ["Ts", "7d"] and rnd.up == "9h" and rnd.hole is None
    assert rnd.seats == [str(desk.seat(ann).id)]  # bob did not bet: not dealt in
    assert datetime.fromisoformat(rnd.deadline or "") == T0.replace(second=15)
    assert desk.store.find(TableSeat, seat_id_for(rnd.id, bob)) is None


def test_at_the_steps_deadline_a_total_of_11_or_less_hits() -> None:
    desk, [ann] = dealt(ELEVEN)
    desk.later(5_000)
    desk.advance("step", 1)
    rnd = desk.round()
    seat_id = str(desk.seat(ann).id)
    assert rnd.automatic["1"] == [[seat_id, "hit", "timeout"]]
    assert rnd.step_cards == ["Ks"]  # 5 6 K: 21, nothing more to decide
    finish(desk)
    assert desk.seat(ann).result["hands"] == [["win", 1_000, 2_000]]


def test_at_the_steps_deadline_a_total_over_11_stands() -> None:
    desk, [ann] = dealt(SEVENTEEN)
    desk.later(5_000)
    desk.advance("step", 1)
    rnd = desk.round()
    assert rnd.automatic["1"] == [[str(desk.seat(ann).id), "stand", "timeout"]]
    assert rnd.phase == "dealer" and rnd.step_cards == []  # nobody drew: no card used


def test_a_step_closes_early_only_once_every_connected_seat_has_decided() -> None:
    desk, [ann, bob] = dealt(SEVENTEEN, 20_000, 20_000)
    early = desk.step("step", 1, early=True, number=1)
    desk.refused(NotDue, desk.handle, early)
    desk.decide(ann, 1, "stand")
    desk.refused(NotDue, desk.handle, early)  # bob still has a choice
    desk.run(desk.handle, tc.Disconnect(bob, "T1"))
    desk.advance("step", 1, early=True)  # bob away: nobody connected is left to decide
    assert desk.round().automatic["1"] == [[str(desk.seat(bob).id), "stand", "timeout"]]


def test_settlement_goes_batch_by_batch_and_the_finish_waits_for_every_batch() -> None:
    desk, players = dealt(SEVENTEEN, 20_000, 20_000, 20_000)  # settle_batch 2: two batches
    desk.later(5_000)
    desk.advance("step", 1)
    desk.advance("dealer")
    rnd = desk.round()
    assert rnd.phase == "settling" and rnd.hole == "Kc" and rnd.dealer_draws == []
    assert desk.advance("settle-batch", 0).settled == 2
    finish_now = desk.step("settle", 0, number=1)
    desk.refused(NotDue, desk.handle, finish_now)  # the third seat is open
    assert desk.advance("settle-batch", 1).settled == 1
    assert desk.advance("settle-batch", 0).settled == 0  # again: nothing twice
    desk.advance("settle")
    rnd = desk.round()
    assert rnd.phase == "settled" and rnd.totals == {"staked": 3_000, "returned": 0}
    for p in players:
        session = desk.session(p)
        assert desk.seat(p).status == "settled" and session.open_round is None
        assert session.last_stake == {
            "game": "blackjack-table",
            "table": "T1",
            "bets": {"main": 1_000},
        }
    assert desk.open().round == 2  # the next round, same shoe, where this one stopped
    assert desk.round().start == 4  # four dealt (the hole among them), no draw: 4


def test_a_window_with_no_bet_leaves_the_round_waiting_until_a_bet_comes() -> None:
    desk = Desk(SEVENTEEN)
    ann = desk.player()
    desk.open()
    desk.later(10_000)
    logged = len(desk.store.log)
    waiting = tc.RoundDealt(round=1, phase=Phase.BETTING, seats=0, waiting=True)
    assert desk.advance("deal") == waiting
    assert desk.topics(logged) == ["betting-waiting@1"]
    assert desk.round().deadline is None
    start = desk.step("start", 0, number=1)
    desk.refused(NotDue, desk.handle, start)  # no bet yet
    desk.refused(Stale, desk.handle, desk.step("deal", 0, number=1))
    desk.later(3_600_000)
    desk.bet(ann)  # accepted: the round waits for bets
    out = desk.advance("start")
    assert datetime.fromisoformat(out.deadline) == T0.replace(hour=13, second=20)
    desk.refused(NotDue, desk.handle, desk.step("deal", 0, number=1))
    desk.later(10_000)
    assert desk.advance("deal").seats == 1


def test_at_the_insurance_deadline_a_seat_that_did_not_answer_declines() -> None:
    desk, [ann] = dealt(ACE_UP)
    desk.later(5_000)
    desk.refused(StepClosed, desk.handle, tc.TableDecide(ann, "T1", 0, "insure"))
    desk.advance("insurance")
    rnd = desk.round()
    assert rnd.automatic["0"] == [[str(desk.seat(ann).id), "no-insurance", "timeout"]]
    assert rnd.peeked and rnd.hole is None and rnd.phase == "step"  # no blackjack: hidden


def test_a_pause_freezes_the_deadline_and_a_void_refunds_every_stake() -> None:
    desk, [ann, bob] = dealt(ELEVEN, 20_000, 20_000)
    desk.decide(ann, 1, "double")
    desk.run(desk.handle, tc.PauseTable("T1", "card reader"))
    desk.later(7_000)
    desk.refused(NotDue, desk.handle, desk.step("step", 1, number=1))
    out = desk.run(desk.handle, tc.ResumeTable("T1"))
    assert datetime.fromisoformat(out.deadline) == T0.replace(second=22)  # 15 s + 7 s
    code = desk.round().code
    void = tc.VoidTableRound("T1", code, "card reader fault", "INC-7")
    assert desk.run(desk.handle, void).refunded == 3_000
    assert desk.balance(ann) == desk.balance(bob) == 20_000
    assert desk.seat(ann).status == "voided" and desk.session(ann).open_round is None
    assert desk.run(desk.handle, void).already_voided is True  # once
    assert desk.open().round == 2
