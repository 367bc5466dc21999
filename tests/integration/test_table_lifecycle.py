"""Disconnection, void, pause, configuration and the betting shortcuts at a live table."""

from __future__ import annotations

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from games.blackjack import Shoe
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableSeat, seat_id_for, table_round_id_for
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live

# 9-7 against a ten: hit, stand, double, cash-out offered.
SHOE = Shoe.of("9c Th 7d 6s 2h 3d 4c 5s 6d 7h 8c 9s Kd Qh 2c 3h 4d 5c 6h 7c 8d 9h Tc Jd Qs")


def round_of(live: Live, number: int) -> TableRound:
    rnd = live.app.find(TableRound, table_round_id_for("T1", number))
    assert rnd is not None
    return rnd


def seat(live: Live, number: int, session: str) -> TableSeat:
    found = live.app.find(TableSeat, seat_id_for(round_of(live, number).id, session))
    assert found is not None
    return found


def books_balance(store: Store) -> None:
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings


def test_disconnected_before_the_betting_deadline_gets_every_bet_back(store: Store) -> None:
    live = Live(store, SHOE)
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(ann, "perfect-pairs", 200)
    live.bet(bob, "main", 1_000)
    assert live.app.session_balance(ann) == 18_800
    live.app.command("d1", tc.Disconnect(ann, "T1"))
    assert live.app.session_balance(ann) == 20_000
    assert seat(live, 1, ann).status == "cancelled"
    live.tick(10_000)
    assert round_of(live, 1).seats == [str(seat(live, 1, bob).id)]
    books_balance(store)


def test_disconnected_after_the_deadline_plays_on_by_automatic_actions(store: Store) -> None:
    live = Live(store, SHOE)
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(bob, "main", 1_000)
    live.tick(10_000)
    live.app.command("d1", tc.Disconnect(ann, "T1"))
    assert live.app.session_balance(ann) == 19_000  # the bet stands (seed 002)
    live.decide(bob, 1, "stand")
    live.tick()  # ann is away: bob's decision is the last one awaited, the step closes
    rnd = round_of(live, 1)
    assert rnd.phase == "settled"
    assert rnd.automatic["1"] == [[str(seat(live, 1, ann).id), "stand", "timeout"]]
    live.app.command("c1", tc.Connect(ann, "T1"))
    assert seat(live, 1, ann).result["hands"]  # the result is there on reconnect
    books_balance(store)


def test_void_mid_round_refunds_every_stake_reverses_payments_and_is_idempotent(
    store: Store,
) -> None:
    live = Live(store, SHOE)
    ann, bob, cat = live.player("ann"), live.player("bob"), live.player("cat")
    live.tick()
    for s in (ann, bob, cat):
        live.bet(s, "main", 1_000)
    live.bet(ann, "21+3", 100)
    live.tick(10_000)
    live.decide(ann, 1, "double")
    live.decide(bob, 1, "cash-out")  # paid at once
    assert live.app.session_balance(bob) > 19_000
    live.decide(cat, 1, "hit")
    live.tick(5_000)
    rnd = round_of(live, 1)
    assert rnd.phase == "step" and rnd.step == 2
    void = tc.VoidTableRound("T1", rnd.code, "card reader fault", "INC-7")
    out = live.app.command("v1", void)
    assert out.refunded == 2_100 + 1_000 + 1_000 and out.reversed_win > 0
    for s in (ann, bob, cat):
        assert live.app.session_balance(s) == 20_000
    again = live.app.command("v2", void)
    assert again.already_voided is True
    for s in (ann, bob, cat):
        assert live.app.session_balance(s) == 20_000
    live.tick()
    nxt = round_of(live, 2)
    # the shoe goes on after the cards the voided round had taken (4 + one step card)
    assert nxt.shoe_id == rnd.shoe_id and nxt.start == 5
    books_balance(store)


def test_void_after_settlement_reverses_the_payouts(store: Store) -> None:
    live = Live(store, SHOE)
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(bob, "main", 2_000)
    live.tick(10_000)
    live.decide(ann, 1, "stand")
    live.decide(bob, 1, "hit")
    live.tick()
    live.tick(5_000)
    rnd = round_of(live, 1)
    assert rnd.phase == "settled"
    assert live.app.session_balance(ann) != 20_000 or live.app.session_balance(bob) != 20_000
    live.app.command("v1", tc.VoidTableRound("T1", rnd.code, "dealer error", "INC-8"))
    assert live.app.session_balance(ann) == 20_000 and live.app.session_balance(bob) == 20_000
    assert round_of(live, 1).phase == "voided" and seat(live, 1, ann).status == "voided"
    assert round_of(live, 2).phase == "betting"  # the table went on
    books_balance(store)


def test_pause_freezes_the_deadline_and_resume_moves_it_by_the_pause(store: Store) -> None:
    live = Live(store, SHOE)
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.clock.advance(4_000)
    live.app.command("p1", tc.PauseTable("T1", "operator check"))
    assert live.tick(20_000) == []  # paused: nothing advances
    live.app.command("p2", tc.ResumeTable("T1"))
    rnd = round_of(live, 1)
    assert rnd.phase == "betting"
    assert rnd.deadline == "2026-12-01T12:00:30.000+00:00"  # 10 s + the 20 s paused
    live.bet(ann, "main", 1_000)  # the window is still open
    assert live.tick(6_000)
    assert round_of(live, 1).phase != "betting"


def test_a_configuration_change_applies_from_the_next_round(store: Store) -> None:
    live = Live(store, SHOE)
    ann = live.player("ann")
    live.tick()
    live.app.command("cfg", tc.ConfigureTable("T1", {**CONFIG, "betting_ms": 3_000}))
    assert round_of(live, 1).config["betting_ms"] == 10_000
    live.bet(ann, "main", 1_000)
    live.tick(10_000)
    live.tick(5_000)
    live.tick(5_000)
    assert round_of(live, 1).phase == "settled"
    assert round_of(live, 2).config["betting_ms"] == 3_000


def test_repeat_double_all_side_bets_and_undo(store: Store) -> None:
    live = Live(store, SHOE)
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(ann, "perfect-pairs", 200)
    live.tick(10_000)
    live.tick(5_000)
    live.tick(5_000)
    assert round_of(live, 1).phase == "settled"
    cmd = live.app.command
    out = cmd("rep", tc.RepeatBets(ann, "T1"))
    assert out.bets == {"main": 1_000, "perfect-pairs": 200}
    out = cmd("2x", tc.DoubleBets(ann, "T1"))
    assert out.bets == {"main": 2_000, "perfect-pairs": 400}
    out = cmd("all", tc.AllSideBets(ann, "T1"))
    assert out.bets == {
        "main": 2_000,
        "perfect-pairs": 500,
        "21+3": 100,
        "hot-3": 100,
        "bust-it": 100,
    }
    out = cmd("u1", tc.UndoBet(ann, "T1"))
    assert "bust-it" not in out.bets
    before = live.app.session_balance(ann)
    out = cmd("u2", tc.UndoBet(ann, "T1", everything=True))
    assert out.bets == {} and live.app.session_balance(ann) == before + 2_000 + 500 + 200
    books_balance(store)


def test_a_session_seated_in_a_live_round_cannot_close_until_it_settles(store: Store) -> None:
    from ledger.errors import SessionBusy
    from tests.helpers import assert_refused

    live = Live(store, SHOE)
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    assert_refused(store, SessionBusy, live.app.close_session, "close-1", ann)
    live.tick(10_000)
    live.tick(5_000)
    live.tick(5_000)
    assert round_of(live, 1).phase == "settled"
    closed = live.app.close_session("close-2", ann)
    assert closed.final_balance == live.app.account_balance("ann") - 980_000
