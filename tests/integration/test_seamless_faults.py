"""Fault injection through croupier's seamless mode against the reference wallet over real
HTTP: for each call kind (debit, credit, rollback) a timeout before and after the wallet
applied it, a late delivery, 5xx and slow answers; and croupier killed (a forked process,
``os._exit``) between sending a call and recording its outcome. At the end every player's
wallet balance is what croupier's log says: no debit taken twice, every win credited once,
every voided or unknown debit rolled back once."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.casino import Casino
from ledger.errors import IdempotencyConflict
from ledger.seamless.book import wallet_book
from ledger.seamless.commands import OpenSeamlessSession
from ledger.seamless.errors import WalletUnavailable
from ledger.seamless.gate import RECOVER_MARGIN_SECONDS, RESTARTED
from tests.conftest import Store
from tests.seamless_support import OP, open_casino
from tests.wallet_fakes import KEY, Wallet, wallet_over_http
from wallet.client import Timeouts, WalletClient
from wallet.delivery import Attempt
from wallet.protocol import Call, Transaction
from wallet.sim.faults import Fault

START = 50_000
HANG_MS = 1_500  # past the client's 1 s read timeout


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[Wallet]:
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet", read_timeout=1.0) as w:
        yield w


def _client(wallet: Wallet) -> WalletClient:
    """Croupier's default client (``wallet.http.PooledHttp``; the HTTP tests use httpx)."""
    base = str(wallet.admin._http.base_url).rstrip("/")
    return WalletClient(
        base, KEY, timeouts=Timeouts(read=1.0), retry=wallet.client.retry, pooled=True
    )


def _open(app: Casino, wallet: Wallet, player: str) -> str:
    wallet.admin.set_player(player, "EUR", START)
    return str(app.command(f"open-{player}", OpenSeamlessSession(OP, player, "EUR")).session_id)


def _net(app: Casino, player: str) -> int:
    """Croupier's log: what the wallet has paid the player, net (every call delivered)."""
    net = 0
    for e in wallet_book(app).listed():
        if e.player_token != player:
            continue
        if e.call == "debit" and e.outcome == "accepted":
            net -= e.amount
        elif e.call == "credit":
            net += e.amount
        elif e.call == "rollback":
            debit = wallet_book(app).entries[str(e.reference_transaction_id)]
            net += e.amount if debit.outcome == "accepted" else 0
    return net


def _play(app: Casino, sid: str, tag: str, rounds: int) -> None:
    for n in range(rounds):
        try:
            r = app.red_dog_bet(f"{tag}-bet-{n}", sid, 500)
        except WalletUnavailable:
            continue
        if r.status == "open":
            app.red_dog_see(f"{tag}-see-{n}", sid)


def _settle_and_compare(app: Casino, wallet: Wallet, players: list[str]) -> None:
    wallet.plan()
    assert app.seamless.outbox.drain() == 0
    wallet.wait_until_idle()  # late requests land (refused) before the books are compared
    for p in players:
        assert wallet.admin.balance(p) == START + _net(app, p), p
    for e in wallet_book(app).listed():
        assert e.state in ("accepted", "refused", "rolled-back"), e


FAULTS = [Fault.TIMEOUT_BEFORE, Fault.TIMEOUT_AFTER, Fault.LATE, Fault.ERROR_5XX, None]


@pytest.mark.parametrize("call", [Call.DEBIT, Call.CREDIT, Call.ROLLBACK])
@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: str(f or "slow"))
def test_each_call_kind_under_each_fault_leaves_the_books_agreeing(
    wallet: Wallet, tmp_path: Path, call: Call, fault: Fault | None
) -> None:
    app = open_casino(tmp_path / "data", _client(wallet))
    try:
        sid = _open(app, wallet, "ann")
        # Two faults in a row on this call kind, with 100 ms added to every call (slow).
        wallet.plan(script=[fault, fault], calls=[call], hang_ms=HANG_MS, latency_ms=100)
        _play(app, sid, "a", 8)
        while call is Call.ROLLBACK:  # a void makes a rollback: leave a round open, void it
            r = app.red_dog_bet(f"v-{len(wallet_book(app).order)}", sid, 500)
            if r.status == "open":
                app.void_round(f"void-{r.code}", r.code, "malfunction", "I-7")
                break
        _settle_and_compare(app, wallet, ["ann"])
        kinds = {e.call for e in wallet_book(app).listed()}
        assert str(call) in kinds or call is Call.CREDIT  # (a run may win nothing)
    finally:
        app.close()


def test_concurrent_sessions_under_random_faults_end_with_the_books_agreeing(
    wallet: Wallet, store: Store
) -> None:
    import threading

    app = open_casino(store.data_dir, _client(wallet), store.database_url)
    try:
        players = [f"p{i}" for i in range(5)]
        sids = {p: _open(app, wallet, p) for p in players}
        rates = {f: 0.06 for f in (Fault.TIMEOUT_BEFORE, Fault.TIMEOUT_AFTER, Fault.ERROR_5XX)}
        wallet.plan(rates=rates | {Fault.DUPLICATE: 0.06}, hang_ms=HANG_MS, seed=16)
        threads = [threading.Thread(target=_play, args=(app, sids[p], p, 6)) for p in players]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _settle_and_compare(app, wallet, players)
        assert any(e.call == "rollback" for e in wallet_book(app).listed())
    finally:
        app.close()


# -- croupier killed between sending a call and recording its outcome ---------------------


class _DiesAfter:
    """A wallet client that makes the call (or not) and then kills the process."""

    def __init__(self, real: WalletClient, call: Call, sent: bool) -> None:
        self.real, self.call, self.sent = real, call, sent
        self.retry = real.retry

    def debit(self, t: Transaction) -> Any:
        if self.call is Call.DEBIT:
            if self.sent:
                self.real.debit(t)
            os._exit(0)
        return self.real.debit(t)

    def send(self, t: Transaction) -> Attempt:
        if t.call is self.call:
            if self.sent:
                self.real.send(t)
            os._exit(0)
        return self.real.send(t)


def _in_child(body: Callable[[], None]) -> None:
    """Run ``body`` in a forked process that ends with ``os._exit`` (no cleanup at all)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            body()
        finally:
            os._exit(3)  # the body should have died inside the wallet call
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.parametrize("sent", [True, False], ids=["after-sending", "before-sending"])
def test_killed_between_a_debit_and_its_outcome_the_restart_rolls_it_back(
    wallet: Wallet, tmp_path: Path, sent: bool
) -> None:
    data = tmp_path / "data"
    app = open_casino(data, _client(wallet))
    sid = _open(app, wallet, "kim")
    app.close()

    def child() -> None:
        doomed = open_casino(data, _DiesAfter(_client(wallet), Call.DEBIT, sent))  # type: ignore[arg-type]
        doomed.red_dog_bet("bet-1", sid, 2_000)

    _in_child(child)
    assert wallet.admin.balance("kim") == (START - 2_000 if sent else START)
    again = open_casino(data, _client(wallet))
    try:
        (debit,) = wallet_book(again).pending_outcomes()
        gate = again.seamless.gate
        # Young, it may be another worker's debit in flight: left (to resolve_stale);
        # once no process can still wait on it, the restart rolls it back.
        assert gate.recover() == 0
        late = time.time() + gate.longest_debit() + RECOVER_MARGIN_SECONDS
        assert gate.recover(now=late) == 1
        _settle_and_compare(again, wallet, ["kim"])
        assert wallet.admin.balance("kim") == START  # the debit given back exactly once
        assert wallet_book(again).entries[debit.transaction_id].cause == RESTARTED
        # The retried request does not debit again: it answers with the rollback.
        with pytest.raises(WalletUnavailable):
            again.red_dog_bet("bet-1", sid, 2_000)
        # Another bet under that request id is refused: the recorded intent says so.
        with pytest.raises(IdempotencyConflict):
            again.red_dog_bet("bet-1", sid, 3_000)
        taken = [r for r in wallet.admin.transactions() if r["call"] == "debit"]
        assert [r["status"] for r in taken] == (["ok"] if sent else ["error"])
        assert [r["state"] for r in taken] == ["rolled-back"]
    finally:
        again.close()


def test_killed_after_sending_a_credit_the_restart_sends_it_again_and_it_is_paid_once(
    wallet: Wallet, store: Store
) -> None:
    data, url = store.data_dir, store.database_url
    app = open_casino(data, _client(wallet), url)
    sid = _open(app, wallet, "lou")
    n = 0
    while not wallet_book(app).pending_deliveries():  # play until a win waits in the outbox
        n += 1
        r = app.red_dog_bet(f"bet-{n}", sid, 1_000)
        if r.status == "open":
            app.red_dog_see(f"see-{n}", sid)
    app.close()

    def child() -> None:
        doomed = open_casino(data, _DiesAfter(_client(wallet), Call.CREDIT, True), url)  # type: ignore[arg-type]
        doomed.seamless.outbox.drain()

    _in_child(child)
    again = open_casino(data, _client(wallet), url)
    try:
        assert again.seamless.outbox.catch_up() == 1  # rebuilt from the log: still pending
        _settle_and_compare(again, wallet, ["lou"])
        (credit,) = [r for r in wallet.admin.transactions() if r["call"] == "credit"]
        assert credit["deliveries"] == 2 and credit["state"] == "applied"
    finally:
        again.close()


def test_a_seamless_stake_never_bypasses_the_wallet(wallet: Wallet, tmp_path: Path) -> None:
    from ledger.seamless.port import StakeNotAuthorised
    from tests.helpers import raw_rows

    app = open_casino(tmp_path / "data", _client(wallet))
    try:
        sid = _open(app, wallet, "max")
        app.stake_gate = None  # as if a route reached the handler without the gate

        class _Store:  # raw_rows needs only where the rows are
            database_url = None
            table = "stored_events"

            def connect(self) -> object:
                import sqlite3

                return sqlite3.connect(tmp_path / "data" / "casino.sqlite")

        before = raw_rows(_Store())  # type: ignore[arg-type]
        with pytest.raises(StakeNotAuthorised):
            app.red_dog_bet("bet-1", sid, 500)
        assert raw_rows(_Store()) == before  # type: ignore[arg-type]
        assert wallet.admin.balance("max") == START
    finally:
        app.close()


def test_an_intent_whose_request_failed_is_rolled_back_by_the_running_server(
    wallet: Wallet, tmp_path: Path
) -> None:
    from ledger.seamless.commands import IntendStake
    from ledger.seamless.wire import to_wire

    app = open_casino(tmp_path / "data", _client(wallet))
    try:
        sid = _open(app, wallet, "ned")
        debit = Transaction.debit("ned", "RD-20261201-000000-AAAA", "main", 700, "EUR")
        app.command("lost#intent", IntendStake(sid, "lost", to_wire(debit), "digest"))
        wallet.client.debit(debit)  # taken; then the request failed before its outcome
        gate = app.seamless.gate
        assert gate.resolve_stale(older_than=3_600) == 0  # too recent to be given up
        gate._in_flight.add(str(debit.transaction_id))  # a request of this process has it
        assert gate.resolve_stale(older_than=0) == 0
        gate._in_flight.clear()
        assert gate.resolve_stale(older_than=0) == 1
        _settle_and_compare(app, wallet, ["ned"])
        assert wallet.admin.balance("ned") == START
        assert app.get_session(sid).pending_debit is None  # the session is free again
    finally:
        app.close()


def test_two_rounds_that_draw_one_game_code_send_two_debits(
    wallet: Wallet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One player, two sessions, the same stake, and both probes draw the same game code
    (4 random characters a second: at 130 rounds/s that happens about once a minute). The
    debit's transaction id derives from the code, so without the code's claim the wallet
    would see one transaction for two debits (a duplicate of the first for the second
    round: a round on a stake the wallet took once)."""
    from ledger import play as play_module
    from ledger.seamless.claim import GameCodeClaim, claim_id_for

    real = play_module.new_game_code
    drawn: list[str] = []

    def twice(prefix: str, now: Any) -> str:
        code = drawn[0] if len(drawn) == 1 else real(prefix, now)
        drawn.append(code)
        return code

    monkeypatch.setattr(play_module, "new_game_code", twice)
    app = open_casino(tmp_path / "data", _client(wallet))
    try:
        first = _open(app, wallet, "ann")
        second = str(app.command("open-ann-2", OpenSeamlessSession(OP, "ann", "EUR")).session_id)
        a = app.red_dog_bet("bet-a", first, 500)
        b = app.red_dog_bet("bet-b", second, 500)
        assert drawn[0] == drawn[1] == a.code  # the second probe drew the first's code
        assert b.code == drawn[2] != a.code  # ... found it claimed, and drew again
        for sid, r, tag in ((first, a, "a"), (second, b, "b")):
            if r.status == "open":
                app.red_dog_see(f"see-{tag}", sid)
        debits = [r for r in wallet.admin.transactions() if r["call"] == "debit"]
        assert len(debits) == 2 and {r["status"] for r in debits} == {"ok"}
        assert len({r["transaction_id"] for r in debits}) == 2
        claim = app.find(GameCodeClaim, claim_id_for(a.code))
        assert claim is not None and claim.session_id == first
        # Had every draw clashed, the caller would be told to retry, not that it erred.
        from api.errors import ledger_status
        from ledger.seamless.claim import GameCodeTaken

        assert ledger_status(GameCodeTaken(f"game code {a.code} is taken")) == 503
        _settle_and_compare(app, wallet, ["ann"])
    finally:
        app.close()
