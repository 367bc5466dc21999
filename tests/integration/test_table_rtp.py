"""``audit-cli rtp`` for the live table: per bet type (main, cash-out, insurance and the
four side bets) what was staked and returned, the observed RTP, next to the certified
figures; voided rounds left out."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any
from uuid import UUID

import pytest

from audit_cli.main import main as audit_cli
from audit_cli.table_rtp import table_rtp
from games.blackjack.certified import certified_rows
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableSeat, table_round_id_for
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live
from tests.integration.test_table_shoe import tables_offered

BETS = {
    "ann": {"main": 1_000, "perfect-pairs": 100, "21+3": 100},
    "bob": {"main": 500, "bust-it": 100},
    "cat": {"main": 300, "hot-3": 100},
    "dan": {"main": 1_000},
}
STEP_ONE = {"ann": "double", "bob": "stand", "cat": "hit", "dan": "cash-out"}


def play_round(live: Live, sessions: dict[str, str], number: int) -> TableRound:
    for name, bets in BETS.items():
        for bet, amount in bets.items():
            live.bet(sessions[name], bet, amount)
    live.tick(10_000)
    while True:
        rnd = live.app.find(TableRound, table_round_id_for("T1", number))
        assert rnd is not None
        if rnd.phase not in ("insurance", "step"):
            return rnd
        for name, s in sessions.items():
            offered = [o[0] for o in tables_offered(live, s)]
            wanted = {0: "insure" if name == "ann" else "no-insurance", 1: STEP_ONE[name]}
            choice = wanted.get(rnd.step if rnd.phase == "step" else 0, "stand")
            if choice in offered:
                live.decide(s, rnd.step if rnd.phase == "step" else 0, choice)
        live.tick(5_000)


def expected(live: Live, rounds: list[TableRound]) -> dict[str, list[int]]:
    """bet -> [staked, returned, base, value], summed from the seat aggregates."""
    out: dict[str, list[int]] = {}

    def add(bet: str, staked: int, returned: int, base: int, value: int) -> None:
        acc = out.setdefault(bet, [0, 0, 0, 0])
        for i, v in enumerate((staked, returned, base, value)):
            acc[i] += v

    for rnd in rounds:
        for sid in rnd.seats:
            seat = live.app.find(TableSeat, UUID(sid))
            assert seat is not None and seat.status == "settled"
            r = seat.result
            hands = [(o, s, p) for o, s, p in r["hands"]]
            hs, hp = sum(h[1] for h in hands), sum(h[2] for h in hands)
            if any(o == "cash-out" for o, _, _ in hands):
                add("cash-out", hs, hp, hs, hp)
            else:
                add("main", hs, hp, seat.bets()["main"], seat.bets()["main"] + hp - hs)
            side_staked = 0
            for bet, stake, _, payout in r["sides"]:
                add(bet, stake, payout, stake, payout)
                side_staked += stake
            insured = r["staked"] - hs - side_staked
            if insured:
                add("insurance", insured, r["insurance"], insured, r["insurance"])
    return out


@pytest.fixture
def played(store: Store) -> tuple[Live, list[TableRound], TableRound]:
    live = Live(store, config={**CONFIG, "decks": 1, "penetration_permille": [450, 530]})
    sessions = {name: live.player(name, 100_000) for name in BETS}
    live.tick()
    rounds = [play_round(live, sessions, n) for n in range(1, 7)]
    assert all(r.phase == "settled" for r in rounds)
    voided = rounds[1]
    live.app.command("v", tc.VoidTableRound("T1", voided.code, "dealer error", "INC-3"))
    return live, [r for r in rounds if r is not voided], voided


def test_rtp_per_bet_type_is_summed_from_the_settled_seats_beside_the_certified_figures(
    store: Store,
    played: tuple[Live, list[TableRound], TableRound],
    capsys: pytest.CaptureFixture[str],
) -> None:
    live, rounds, voided = played
    want = expected(live, rounds)
    assert {"main", "cash-out", "perfect-pairs", "21+3", "hot-3", "bust-it"} <= set(want)
    report = table_rtp(store.db)
    assert report.seats == 4 * len(rounds) and report.voided_seats == 4
    got = {r.bet: [r.staked, r.returned, r.base, r.value] for r in report.rows}
    assert got == want
    by_bet = {r.bet: r for r in report.rows}
    assert by_bet["main"].paytable_id == "main, ten-up all-bets"
    assert by_bet["perfect-pairs"].paytable_id == "perfect-pairs-25-12-6"
    assert by_bet["main"].observed == want["main"][3] / want["main"][2]
    assert by_bet["perfect-pairs"].certified() == {"side bet perfect-pairs": Fraction(398, 415)}
    optimal = next(
        r.rtp
        for r in certified_rows()
        if r.paytable_id == "main, ten-up all-bets" and r.play == "optimal"
    )
    assert by_bet["main"].certified()["optimal"] == optimal
    assert set(by_bet["cash-out"].certified()) == {"always cash out at the first opportunity"}
    # Every hand played to the end (dan cashed out every round; a split makes two hands).
    main_hands = 0
    for rnd in rounds:
        for sid in rnd.seats:
            seat = live.app.find(TableSeat, UUID(sid))
            assert seat is not None
            hands = seat.result["hands"]
            if not any(o == "cash-out" for o, _, _ in hands):
                main_hands += len(hands)
    assert main_hands >= len(rounds) * 3
    assert by_bet["main"].hands == main_hands
    capsys.readouterr()
    assert audit_cli(["rtp", "--db", store.db, "--json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    rows = {r["bet"]: r for r in doc["tables"][0]["rows"]}
    assert rows["bust-it"]["staked"] == want["bust-it"][0]
    assert rows["bust-it"]["returned"] == want["bust-it"][1]
    assert rows["perfect-pairs"]["certified"] == {"side bet perfect-pairs": 398 / 415}
    assert rows["main"]["rounds"] == len(rounds) and voided.code not in json.dumps(doc)
    assert audit_cli(["rtp", "--db", store.db]) == 0
    text = capsys.readouterr().out
    for bet in ("main", "cash-out", "perfect-pairs", "21+3", "hot-3", "bust-it"):
        assert f"\n│ {bet} " in text.replace("┃", "│") or f"│ {bet}" in text, bet
    assert "95.9036 %" in text  # perfect pairs, certified (398/415)


def test_the_table_rows_stand_beside_the_other_games_rows(
    store: Store,
    played: tuple[Live, list[TableRound], TableRound],
    capsys: pytest.CaptureFixture[str],
) -> None:
    live, rounds, _ = played
    # a Red Dog round from a session that has left the table
    sid = live.player("eve")
    out = live.app.red_dog_bet("rd", sid, 300)
    if out.status == "open":
        live.app.red_dog_see("rd-see", sid)
    capsys.readouterr()
    audit_cli(["rtp", "--db", store.db, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [g["game"] for g in doc["groups"]] == ["red-dog"]
    assert doc["tables"][0]["seats"] == 4 * len(rounds)
