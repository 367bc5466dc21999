"""The statement and the wallet book hold nothing that grows with the history: a running
application keeps no statement line and, of the wallet transactions, only the open ones
(debits without an outcome, calls not yet delivered); everything else is read from the
log at each query."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.table_messages import KEPT_CODES, TableFold
from ledger.bootstrap import bootstrap
from ledger.seamless.book import Entry, WalletBook, listing, wallet_book
from ledger.seamless.commands import OpenSeamlessSession
from ledger.statement import Line, StatementBook, statements
from tests.conftest import Store
from tests.seamless_support import OP, open_casino
from tests.wallet_fakes import Wallet, wallet_over_http

PLAYER = "bounded"


def alive(cls: type) -> int:
    """Instances of ``cls`` still reachable after a full collection."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_the_application_keeps_no_statement_line_between_queries(store: Store) -> None:
    app = bootstrap(store.settings(), store.keyring)
    store.apps.append(app)
    app.open_account("open", PLAYER, "EUR")
    for n in range(60):
        app.deposit(f"dep-{n}", PLAYER, 100 + n)
    lines = statements(app).lines(PLAYER)
    assert [ln.amount for ln in lines] == [100 + n for n in range(60)]
    assert lines[-1].balance == app.account_balance(PLAYER)
    # A page is read only up to its last line, with the balances of everything before it.
    page = statements(app).lines(PLAYER, after=lines[9].seq, limit=5)
    assert page == lines[10:15]
    assert sum(statements(app).balances(PLAYER).values()) == lines[-1].balance
    del lines, page
    assert alive(Line) == 0  # nothing held by the application between queries


def test_a_statement_page_keeps_only_its_lines_and_only_its_player() -> None:
    book = StatementBook("p1", after=40, limit=5)
    book.feed(1, "a1", "croupier/account/opened@1", {"player_id": "p1"})
    book.feed(2, "a2", "croupier/account/opened@1", {"player_id": "p2"})
    for seq in range(3, 203):
        account = "a1" if seq % 2 else "a2"
        mv = {"source": "house", "destination": f"account:{account}", "amount": 1}
        book.feed(seq, account, "croupier/account/deposited@1", {"movement": mv})
    lines = book.lines("p1")
    assert [ln.seq for ln in lines] == [41, 43, 45, 47, 49]
    assert [ln.balance for ln in lines] == [20, 21, 22, 23, 24]  # the moves before count
    assert book.full and book.lines("p2") == []


def _intended(tid: str) -> dict[str, Any]:
    return {
        "transaction": {
            "call": "debit",
            "transaction_id": tid,
            "player_token": "ann",
            "game_code": f"RD-{tid}",
            "stage": "main",
            "amount": 5,
            "currency": "EUR",
            "reference_transaction_id": None,
        }
    }


def _credit(tid: str, ref: str) -> dict[str, Any]:
    doc = _intended(tid)
    doc["transaction"].update(call="credit", reference_transaction_id=ref)
    return doc


def test_an_open_only_book_holds_the_open_transactions_and_a_bounded_operator_index() -> None:
    asked: list[str] = []

    def operator_of(session_id: str) -> str:
        asked.append(session_id)
        return f"op-{session_id}"

    book = WalletBook(open_only=True, operator_of=operator_of, operators_max=10)
    seq = 0

    def feed(sid: str, topic: str, doc: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        book.feed(seq, sid, f"croupier/{topic}@1", doc)

    for n in range(1_000):
        sid = f"s{n}"
        feed(sid, "session/opened", {"operator": f"op-{sid}"})
        feed(sid, "session/stake-intended", _intended(f"d{n}"))
        if n == 998:
            continue  # a debit left without an outcome
        feed(sid, "session/stake-resolved", {"transaction_id": f"d{n}", "outcome": "accepted"})
        feed(sid, "session/wallet-call-queued", _credit(f"c{n}", f"d{n}"))
        if n != 997:  # a credit left undelivered
            feed(
                "w",
                "wallet-delivery/delivered",
                {"transaction_id": f"c{n}", "state": "acknowledged"},
            )
    assert sorted(book.entries) == ["c997", "d998"]
    assert [e.transaction_id for e in book.pending_outcomes()] == ["d998"]
    assert [e.transaction_id for e in book.pending_deliveries()] == ["c997"]
    assert len(book.operators) <= 10 and asked == []
    # A session the index no longer holds: its operator is asked for, not lost.
    feed("s3", "session/wallet-call-queued", _credit("late", "d3"))
    assert asked == ["s3"] and book.entries["late"].operator == "op-s3"


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[Wallet]:
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet", read_timeout=1.0) as w:
        yield w


def test_a_seamless_casino_keeps_only_the_open_wallet_transactions(
    wallet: Wallet, tmp_path: Path
) -> None:
    app = open_casino(tmp_path / "data", wallet.client)
    try:
        wallet.admin.set_player("ann", "EUR", 1_000_000)
        sid = str(app.command("open-ann", OpenSeamlessSession(OP, "ann", "EUR")).session_id)
        for n in range(30):
            r = app.red_dog_bet(f"bet-{n}", sid, 500)
            if r.status == "open":
                app.red_dog_see(f"see-{n}", sid)
        assert app.seamless.outbox.drain() == 0
        everything = wallet_book(app).listed()
        assert len(everything) >= 30 and all(e.operator == OP for e in everything)
        assert (
            app.seamless.open_items.catch_up().entries == {}
        )  # all delivered, resolved: none held
        page = listing(app, after=everything[4].seq, limit=3)
        assert [e.to_dict() for e in page] == [e.to_dict() for e in everything[5:8]]
        del everything, page
        assert alive(Entry) == 0
    finally:
        app.close()


def test_a_table_stream_remembers_a_bounded_number_of_other_games_codes(store: Store) -> None:
    app = bootstrap(store.settings(), store.keyring)
    store.apps.append(app)
    fold = TableFold(app, "ibj-bounded")
    for n in range(KEPT_CODES + 100):  # every other game's stake and win passes by it
        assert not fold._ours(f"JB-{n:06d}")
        assert len(fold.codes) <= KEPT_CODES
