"""Seamless mode at a live Infinite Blackjack table, end to end over HTTP: croupier's table
routes (TestClient) against the reference wallet served by uvicorn, with chosen shoes and a
fake clock. Every stake stage (main, side bets, insurance, double, split) is one debit at
most once; every payout (a cash-out, the settlement) one credit; every bet taken back (an
undo, a void) one rollback. At the end, for every player, the wallet's balance is what
croupier's log and the seats' own books say, and ``audit-cli`` verifies and reconciles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_cli
from games.blackjack import Shoe
from ledger.seamless.book import wallet_book
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    seat_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.players import Players
from ledger.tables.runner import TableRunner
from ledger.unit_of_work import UnitOfWork
from tests.helpers import ChosenSeeds
from tests.integration.table_helpers import CONFIG, ChosenShoes, FakeClock, seed_of
from tests.integration.test_http_e2e import OPERATOR, bearer
from tests.seamless_support import OP, Seamless, open_casino
from tests.wallet_fakes import wallet_over_http
from wallet.client import DebitResult, WalletClient
from wallet.protocol import Call, Transaction
from wallet.sim.faults import Fault

START = 100_000
# 8-8 against an ace: insurance, then hit / stand / double / split / cash-out all offered.
EIGHTS = Shoe.of("8c Ah 8d 7s 3h Td 2c 9s 4d 5h 6c Kd 3s 2h 4c 5d 9c Th")
# 5-4 against a six: a double is offered at step 1 (then the rounds after it).
NINE = Shoe.of(" ".join(["5c 6d 4h Ts Kh Qs Js As 9h 8s Jd Qd Kd Ad 9d 8d Tc Jc Qc Kc"] * 3))


@dataclass
class Player:
    sid: str
    token: str
    start: int


@dataclass
class Bj:
    s: Seamless
    clock: FakeClock
    runner: TableRunner
    players: dict[str, Player] = field(default_factory=dict)

    def join(self, name: str, balance: int = START) -> Player:
        sid, token = self.s.open(name, balance)
        self.players[name] = p = Player(sid, token, balance)
        return p

    def post(self, name: str, action: str, body: Any = None) -> httpx.Response:
        p = self.players[name]
        return self.s.post(f"/v1/sessions/{p.sid}/tables/T1/{action}", body or {}, p.token)

    def bet(self, name: str, bet: str, amount: int) -> httpx.Response:
        return self.post(name, "bets", {"bet": bet, "amount": amount})

    def decide(self, name: str, step: int, decision: str) -> httpx.Response:
        return self.post(name, "decide", {"step": step, "decision": decision})

    def tick(self, ms: int = 0) -> list[str]:
        return self.runner.tick(self.clock.advance(ms))

    def round(self, number: int | None = None) -> TableRound:
        if number is None:
            table = self.s.casino.find(Table, table_id_for("T1"))
            assert table is not None and table.round_id is not None
            found = self.s.casino.find(TableRound, UUID(table.round_id))
        else:
            found = self.s.casino.find(TableRound, table_round_id_for("T1", number))
        assert found is not None
        return found

    def seat(self, name: str, number: int) -> TableSeat:
        rnd = self.round(number)
        found = self.s.casino.find(TableSeat, seat_id_for(rnd.id, self.players[name].sid))
        assert found is not None
        return found

    def offered(self, name: str) -> list[str]:
        handler: Any = self.s.casino.handlers[tc.PlaceBet]
        tables = handler.__self__
        assert isinstance(tables, Players)
        uow = UnitOfWork(self.s.casino.find, {})
        return [o[0] for o in tables.offered(uow, "T1", self.players[name].sid)]

    def entries(self, name: str) -> list[Any]:
        return [e for e in wallet_book(self.s.casino).listed() if e.player_token == name]

    def wallet_moved(self, name: str) -> int:
        balance = self.s.wallet.admin.balance(name)
        assert balance is not None
        return balance - self.players[name].start

    def debits_sent(self) -> int:
        return len([r for r in self.s.wallet.admin.transactions() if r["call"] == "debit"])


@contextmanager
def table(tmp_path: Path, *shoes: Shoe, read_timeout: float = 1.0) -> Iterator[Bj]:
    (tmp_path / "wallet").mkdir(exist_ok=True)
    clock = FakeClock()
    with wallet_over_http(tmp_path / "wallet", read_timeout=read_timeout) as wallet:
        casino = open_casino(
            tmp_path / "data",
            wallet.client,
            clock=clock,
            seed_source=ChosenSeeds(*(seed_of(i) for i in range(len(shoes)))),
            shoe_maker=ChosenShoes(*shoes),
        )
        try:
            with TestClient(create_app(casino)) as http:
                s = Seamless(wallet, casino, http, tmp_path / "data")
                casino.command("create-T1", tc.CreateTable("T1", "EUR", dict(CONFIG)))
                bj = Bj(s, clock, TableRunner(casino, "T1", clock))
                bj.tick()
                assert bj.round().number == 1
                yield bj
        finally:
            casino.close()


def play_out(bj: Bj, number: int, plans: dict[str, dict[int, str]] | None = None) -> None:
    """Close every window of round ``number`` (deciding by ``plans`` where offered)."""
    plans = plans or {}
    rnd = bj.round(number)
    for _ in range(40):
        if rnd.phase in ("settled", "voided"):
            return
        if rnd.phase == "step":
            for name, steps in plans.items():
                wanted = steps.get(rnd.step)
                if wanted is not None and wanted in bj.offered(name):
                    r = bj.decide(name, rnd.step, wanted)
                    assert r.status_code == 200, r.text
        bj.tick(10_000)
        rnd = bj.round(number)
    raise AssertionError(f"round {number} did not finish: {rnd.phase}")


def assert_books_agree(bj: Bj, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The outbox delivered; per player, the wallet moved what croupier's log says and what
    the seats' own books say; ``audit-cli`` verifies the balances and reconciles it all."""
    bj.s.deliver()
    bj.s.wallet.wait_until_idle()
    rows = bj.s.wallet.admin.transactions()
    by_id = {r["transaction_id"]: r for r in rows}
    assert len(by_id) == len(rows)  # one row per transaction id: nothing applied twice
    for name, p in bj.players.items():
        seats = [
            bj.s.casino.find(TableSeat, seat_id_for(table_round_id_for("T1", n), p.sid))
            for n in range(1, bj.round().number + 1)
        ]
        seat_net = sum(
            s.credited - s.debited for s in seats if s is not None and s.status == "settled"
        )
        assert bj.wallet_moved(name) == bj.s.croupier_net(name) == seat_net, name
        for e in bj.entries(name):
            assert e.state in ("accepted", "refused", "rolled-back"), e
            if e.call in ("credit", "rollback"):  # each delivered, applied once
                assert by_id[e.transaction_id]["amount"] == e.amount, e
    bj.s.casino.seal()
    db = str(bj.s.data_dir / "casino.sqlite")
    capsys.readouterr()
    rc = audit_cli(["verify", "--db", db, "--trust-local-keyring", "--balances", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    for name in bj.players:
        assert out["balances"].get(f"wallet:{OP}:{name}", 0) == bj.wallet_moved(name)
    assert audit_cli(["wallet", "reconcile", "--db", db, "--operator", OP, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    listed = {t["transaction_id"]: t for t in doc["transactions"]}
    assert set(listed) == {e.transaction_id for e in wallet_book(bj.s.casino).listed()}
    page = bj.s.http.get("/v1/wallet/transactions?limit=1000", headers=bearer(OPERATOR))
    assert {t["transaction_id"] for t in page.json()["transactions"]} == set(listed)
    for name in bj.players:
        assert doc["totals"]["players"][f"{OP}:{name}"]["net"] == bj.wallet_moved(name)
    return listed


def stages(entries: list[Any], call: str) -> list[str]:
    return [e.stage.split(".")[0] for e in entries if e.call == call]


# -- every stake stage in one round ----------------------------------------------------------


def test_a_round_with_side_bets_insurance_split_double_and_cash_out_debits_and_credits_each_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, EIGHTS) as bj:
        for name in ("ann", "bob", "cat", "dan"):
            bj.join(name)
        for name in bj.players:
            assert bj.bet(name, "main", 1_000).status_code == 200
        assert bj.bet("ann", "perfect-pairs", 100).status_code == 200
        assert bj.post("bob", "all-side-bets").status_code == 200
        assert bj.bet("cat", "21+3", 200).status_code == 200
        bj.tick(10_000)
        assert bj.round(1).phase == "insurance" and bj.round(1).up == "Ah"
        assert bj.post("ann", "insurance", {"take": True}).status_code == 200
        assert bj.post("bob", "insurance", {"take": False}).status_code == 200
        bj.tick(5_000)
        assert bj.round(1).phase == "step"
        plans = {
            "ann": {1: "split", 2: "stand", 3: "stand"},
            "bob": {1: "double"},
            "cat": {1: "hit", 2: "stand"},
            "dan": {1: "cash-out"},
        }
        play_out(bj, 1, plans)
        assert bj.round(1).phase == "settled"
        listed = assert_books_agree(bj, capsys)

        ann = bj.entries("ann")
        assert stages(ann, "debit") == ["main:1", "side:perfect-pairs", "insurance:0", "split:1"]
        assert [e.amount for e in ann if e.call == "debit"] == [1_000, 100, 500, 1_000]
        bob = bj.entries("bob")
        assert stages(bob, "debit") == ["main:1", "side:all", "double:1"]
        seat = bj.seat("bob", 1)
        assert [e.amount for e in bob if e.call == "debit"][1] == sum(
            a for b, a in seat.bets().items() if b != "main"
        )
        dan = bj.entries("dan")
        assert stages(dan, "credit") == ["cash-out:1"]
        assert [e.amount for e in dan if e.call == "credit"] == [bj.seat("dan", 1).credited]
        for name in bj.players:  # a loss sends nothing; a payout one credit of it
            seat = bj.seat(name, 1)
            credits = [e for e in bj.entries(name) if e.call == "credit"]
            assert sum(e.amount for e in credits) == seat.credited
            assert len([e for e in credits if e.stage.startswith("win:")]) <= 1
            assert all(e.amount > 0 for e in credits)
        assert any(e.stage.startswith("win:") for n in bj.players for e in bj.entries(n))
        # a void of a round that credited seamless seats is refused: nothing changes
        before = len(wallet_book(bj.s.casino).listed())
        r = bj.s.post(
            f"/v1/table-rounds/{bj.round(1).code}/void",
            {"reason": "shuffler fault", "incident_id": "INC-2"},
            OPERATOR,
        )
        assert r.status_code == 422 and r.json()["code"] == "invalid-request", r.text
        assert len(wallet_book(bj.s.casino).listed()) == before
        assert bj.round(1).phase == "settled" and bj.seat("dan", 1).status == "settled"
        assert len(listed) == len(wallet_book(bj.s.casino).listed())  # ids all distinct


# -- undo, bets again, limits, repeat, 2x, a void --------------------------------------------


def test_undo_rolls_back_the_bets_debit_a_new_bet_gets_a_new_id_and_a_void_rolls_back_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        bj.join("ann")
        assert bj.bet("ann", "main", 1_000).status_code == 200
        assert bj.bet("ann", "perfect-pairs", 100).status_code == 200
        r = bj.post("ann", "undo")
        assert r.status_code == 200 and r.json()["bets"] == {"main": 1_000}
        assert bj.bet("ann", "perfect-pairs", 100).status_code == 200
        r = bj.post("ann", "undo-all")
        assert r.status_code == 200 and r.json()["bets"] == {}
        assert bj.bet("ann", "main", 1_000).status_code == 200

        # bad input: over the limit, no debit is sent and nothing changes
        sent, seat = bj.debits_sent(), bj.seat("ann", 1)
        r = bj.bet("ann", "main", 10_000_000)
        assert r.status_code in (400, 409, 422) and r.json()["code"] == "bet-above-maximum", r.text
        assert bj.debits_sent() == sent
        after = bj.seat("ann", 1)
        assert (after.version, after.chips) == (seat.version, seat.chips)
        bj.s.deliver()
        assert bj.wallet_moved("ann") == -1_000  # the undone bets' debits rolled back

        pp = [e for e in bj.entries("ann") if e.stage.startswith("side:perfect-pairs")]
        assert len(pp) == 2 and pp[0].transaction_id != pp[1].transaction_id
        mains = [e for e in bj.entries("ann") if e.stage.startswith("main:")]
        assert len({e.transaction_id for e in mains}) == 2
        play_out(bj, 1)

        # round 2: REPEAT (one debit), 2x (one more), then voided mid-round
        r = bj.post("ann", "repeat")
        assert r.status_code == 200 and r.json()["bets"] == {"main": 1_000}
        assert bj.post("ann", "double").status_code == 200
        two = [e for e in bj.entries("ann") if bj.round(2).code == e.game_code]
        assert stages(two, "debit") == ["main:repeat", "main:2x"]
        bj.tick(10_000)
        assert bj.round(2).phase in ("step", "insurance")
        bj.s.deliver()
        moved = bj.wallet_moved("ann")
        code = bj.round(2).code
        r = bj.s.post(
            f"/v1/table-rounds/{code}/void",
            {"reason": "shuffler fault", "incident_id": "INC-1"},
            OPERATOR,
        )
        assert r.status_code == 200, r.text
        again = bj.s.post(
            f"/v1/table-rounds/{code}/void",
            {"reason": "shuffler fault", "incident_id": "INC-1"},
            OPERATOR,
        )
        assert again.status_code == 200 and again.json()["already_voided"]
        bj.s.deliver()
        assert bj.wallet_moved("ann") == moved + 2_000  # both debits back, once
        listed = assert_books_agree(bj, capsys)
        rollbacks = [t for t in listed.values() if t["call"] == "rollback"]
        assert len(rollbacks) == 2 + 2 + 1  # undo, undo-all (2 debits), void (repeat + 2x)
        assert {t["state"] for t in rollbacks} == {"rolled-back"}


# -- refused, timed out, and closed while in flight ------------------------------------------


class Slow:
    """A wallet client whose debits take ``ms`` of the table's clock (the window closes
    while the wallet answers)."""

    def __init__(self, inner: WalletClient, clock: FakeClock, ms: int) -> None:
        self.inner, self.clock, self.ms = inner, clock, ms

    def debit(self, t: Transaction) -> DebitResult:
        result = self.inner.debit(t)
        self.clock.advance(self.ms)
        return result

    def longest_call(self) -> float:
        return self.inner.longest_call()


def test_a_debit_accepted_after_the_window_closed_is_rolled_back_and_the_bet_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        bj.join("ann")
        gate = bj.s.casino.seamless.gate
        real = gate.wallets
        gate.wallets = {OP: Slow(real[OP], bj.clock, 11_000)}  # type: ignore[dict-item]
        r = bj.bet("ann", "main", 1_000)
        assert r.status_code == 409 and r.json()["code"] == "betting-closed", r.text
        gate.wallets = real
        bj.s.deliver()
        assert bj.wallet_moved("ann") == 0
        (debit, rollback) = bj.entries("ann")
        assert debit.state == rollback.state == "rolled-back"
        assert bj.s.casino.get_session(bj.players["ann"].sid).open_round is None
        bj.tick()  # the window closed with no bet: the round waits for a first one
        r = bj.bet("ann", "main", 1_000)  # bet again, in the waiting round
        assert r.status_code == 200, r.text
        bj.tick()  # the first bet starts the timer again: a full window from now
        bj.tick(10_000)
        rnd = bj.round(1)
        assert rnd.phase == "step" and "double" in bj.offered("ann")
        gate.wallets = {OP: Slow(real[OP], bj.clock, 6_000)}  # type: ignore[dict-item]
        r = bj.decide("ann", rnd.step, "double")
        assert r.status_code == 409 and r.json()["code"] == "step-closed", r.text
        gate.wallets = real
        play_out(bj, 1)
        assert [e.stage.split(":")[0] for e in bj.entries("ann") if e.call == "debit"] == [
            "main",
            "main",
            "double",
        ]
        assert_books_agree(bj, capsys)


def test_a_refused_double_refuses_that_decision_and_the_player_decides_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        bj.join("ann", 1_500)
        assert bj.bet("ann", "main", 1_000).status_code == 200
        bj.tick(10_000)
        rnd = bj.round(1)
        r = bj.decide("ann", rnd.step, "double")
        assert r.status_code == 409 and r.json()["code"] == "insufficient-funds", r.text
        assert bj.seat("ann", 1).decisions == {}
        r = bj.decide("ann", rnd.step, "hit")
        assert r.status_code == 200 and r.json()["applied"] == "hit", r.text
        play_out(bj, 1)
        (refused,) = [e for e in bj.entries("ann") if e.state == "refused"]
        assert refused.stage.startswith("double:") and refused.amount == 1_000
        assert_books_agree(bj, capsys)


def test_a_bet_whose_debit_times_out_after_the_wallet_applied_it_is_rolled_back_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        bj.join("ann")
        bj.s.wallet.plan(script=[Fault.TIMEOUT_AFTER], calls=[Call.DEBIT], hang_ms=1_500)
        r = bj.bet("ann", "main", 1_000)
        assert r.status_code == 503 and r.json()["code"] == "wallet-unavailable", r.text
        bj.s.wallet.plan()
        bj.s.wallet.wait_until_idle()
        r = bj.bet("ann", "main", 1_000)  # a new bet: a new transaction id
        assert r.status_code == 200, r.text
        play_out(bj, 1)
        listed = assert_books_agree(bj, capsys)
        debits = [t for t in listed.values() if t["call"] == "debit"]
        assert [t["state"] for t in debits] == ["rolled-back", "accepted"]
        row = bj.s.wallet.rows(debits[0]["transaction_id"])
        assert row and row[0]["state"] == "rolled-back"  # the wallet had applied it


def test_leaving_before_the_deal_rolls_back_every_debit_of_the_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        bj.join("bob")
        bj.join("ann")
        assert bj.bet("bob", "main", 1_000).status_code == 200
        assert bj.post("bob", "all-side-bets").status_code == 200
        assert bj.bet("ann", "main", 500).status_code == 200
        r = bj.post("bob", "leave")
        assert r.status_code == 200 and not r.json()["seated"], r.text
        assert bj.seat("bob", 1).wallet_debits == []
        play_out(bj, 1)
        listed = assert_books_agree(bj, capsys)
        assert bj.wallet_moved("bob") == 0
        bobs = [t for t in listed.values() if t["player_token"] == "bob"]
        assert sorted(t["call"] for t in bobs) == ["debit", "debit", "rollback", "rollback"]
        assert {t["state"] for t in bobs} == {"rolled-back"}
