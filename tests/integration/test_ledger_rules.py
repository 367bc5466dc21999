"""Ledger rules (DESIGN §1.5, §2.3, §2.6) through the real Casino, on SQLite and PostgreSQL.

Every rejection test also checks that the refused command left the raw event rows
byte-for-byte as they were: a rejected command writes nothing, not even its request id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from ledger.accounts import account_id_for
from ledger.casino import Casino
from ledger.errors import (
    AccountExists,
    AccountNotFound,
    CurrencyMismatch,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidAmount,
    InvalidRequest,
    SessionClosed,
    SessionNotFound,
)
from ledger.results import AccountMoved, AccountOpened
from tests.conftest import Store
from tests.helpers import assert_refused, raw_rows
from tests.money import credit_win, refund, stake

STAKE_DEBITED = "croupier/session/stake-debited@1"

Row = tuple[Any, ...]


def count_topic(store: Store, topic: str) -> int:
    return sum(1 for row in raw_rows(store) if row[3] == topic)


def funded_player(app: Casino, player: str = "ann", deposit: int = 1_000) -> str:
    app.open_account(f"open-{player}", player, "EUR")
    app.deposit(f"deposit-{player}", player, deposit)
    return player


def open_session(app: Casino, player: str = "ann", buy_in: int = 400, rid: str = "buy-in") -> str:
    return str(app.open_session(rid, player, buy_in).session_id)


# -- accounts -------------------------------------------------------------------------


def test_a_new_account_starts_with_a_zero_balance(app: Casino) -> None:
    result = app.open_account("r1", "ann", "EUR")

    assert result == AccountOpened(player_id="ann", currency="EUR", balance=0)
    assert app.account_balance("ann") == 0


def test_deposits_and_withdrawals_move_the_account_balance(app: Casino) -> None:
    app.open_account("r1", "ann", "EUR")

    assert app.deposit("r2", "ann", 1_000) == AccountMoved(player_id="ann", balance=1_000)
    assert app.deposit("r3", "ann", 250).balance == 1_250
    assert app.withdraw("r4", "ann", 1_250) == AccountMoved(player_id="ann", balance=0)
    assert app.account_balance("ann") == 0


def test_opening_an_account_twice_is_refused(store: Store, app: Casino) -> None:
    app.open_account("r1", "ann", "EUR")

    assert_refused(store, AccountExists, app.open_account, "r2", "ann", "EUR")


def test_withdrawing_more_than_the_account_balance_is_refused(store: Store, app: Casino) -> None:
    funded_player(app, deposit=100)

    err = assert_refused(store, InsufficientFunds, app.withdraw, "w1", "ann", 101)

    assert err.ids == {"player_id": "ann"}
    assert app.account_balance("ann") == 100


def test_commands_for_an_unknown_player_are_refused(store: Store, app: Casino) -> None:
    funded_player(app)

    assert_refused(store, AccountNotFound, app.deposit, "x1", "zed", 10)
    assert_refused(store, AccountNotFound, app.withdraw, "x2", "zed", 10)
    assert_refused(store, AccountNotFound, app.open_session, "x3", "zed", 10)
    with pytest.raises(AccountNotFound):
        app.account_balance("zed")


# -- game sessions --------------------------------------------------------------------


def test_a_buy_in_moves_money_from_the_account_to_the_session(app: Casino) -> None:
    funded_player(app, deposit=1_000)

    result = app.open_session("s1", "ann", 400)

    assert result.balance == 400
    assert result.account_balance == 600
    assert result.currency == "EUR"
    assert app.session_balance(result.session_id) == 400
    assert app.account_balance("ann") == 600


def test_a_buy_in_above_the_account_balance_is_refused(store: Store, app: Casino) -> None:
    funded_player(app, deposit=100)

    assert_refused(store, InsufficientFunds, app.open_session, "s1", "ann", 101)
    assert app.account_balance("ann") == 100


def test_a_buy_in_in_another_currency_than_the_account_is_refused(
    store: Store, app: Casino
) -> None:
    funded_player(app)

    assert_refused(store, CurrencyMismatch, app.open_session, "s1", "ann", 100, "USD")


def test_stakes_wins_and_refunds_move_the_session_balance(app: Casino) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)

    assert stake(app, "k1", sid, "round-1", 100)["balance"] == 300
    assert credit_win(app, "w1", sid, "round-1", 250) == {
        "session_id": sid,
        "round_id": "round-1",
        "amount": 250,
        "balance": 550,
    }
    assert stake(app, "k2", sid, "round-2", 50)["balance"] == 500
    assert refund(app, "f2", sid, "round-2", 50)["balance"] == 550
    assert app.session_balance(sid) == 550
    assert app.account_balance("ann") == 600


def test_a_stake_may_use_the_whole_session_balance(app: Casino) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)

    assert stake(app, "k1", sid, "round-1", 400)["balance"] == 0


def test_a_stake_above_the_session_balance_is_refused(store: Store, app: Casino) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    stake(app, "k1", sid, "round-1", 300)

    err = assert_refused(store, InsufficientFunds, stake, app, "k2", sid, "round-2", 101)

    assert err.ids == {"session_id": sid}
    assert app.session_balance(sid) == 100


def test_closing_a_session_returns_its_final_balance_to_the_account(
    store: Store, app: Casino
) -> None:
    funded_player(app, deposit=1_000)
    sid = open_session(app, buy_in=400)
    stake(app, "k1", sid, "round-1", 100)
    credit_win(app, "w1", sid, "round-1", 300)

    result = app.close_session("c1", sid)

    assert result.wire() == {"session_id": sid, "final_balance": 600, "account_balance": 1_200}
    assert app.account_balance("ann") == 1_200
    assert app.session_balance(sid) == 0
    assert count_topic(store, "croupier/account/session-returned@1") == 1


def test_closing_a_session_twice_with_a_new_request_id_is_refused(
    store: Store, app: Casino
) -> None:
    funded_player(app, deposit=1_000)
    sid = open_session(app, buy_in=400)
    app.close_session("c1", sid)

    assert_refused(store, SessionClosed, app.close_session, "c2", sid)
    assert app.account_balance("ann") == 1_000


def test_closing_a_session_again_with_the_same_request_id_returns_the_original_result(
    store: Store, app: Casino
) -> None:
    funded_player(app, deposit=1_000)
    sid = open_session(app, buy_in=400)
    stake(app, "k1", sid, "round-1", 100)
    first = app.close_session("c1", sid)
    before = raw_rows(store)

    again = app.close_session("c1", sid)

    assert again == first
    assert first.wire() == {"session_id": sid, "final_balance": 300, "account_balance": 900}
    assert raw_rows(store) == before
    assert app.account_balance("ann") == 900


def test_closing_a_session_with_nothing_left_returns_nothing(store: Store, app: Casino) -> None:
    funded_player(app, deposit=1_000)
    sid = open_session(app, buy_in=400)
    stake(app, "k1", sid, "round-1", 400)

    result = app.close_session("c1", sid)

    assert result.wire() == {"session_id": sid, "final_balance": 0, "account_balance": 600}
    assert count_topic(store, "croupier/account/session-returned@1") == 0
    assert_refused(store, SessionClosed, app.close_session, "c2", sid)


def test_money_commands_on_a_closed_session_are_refused(store: Store, app: Casino) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    app.close_session("c1", sid)

    assert_refused(store, SessionClosed, stake, app, "k1", sid, "round-1", 10)
    assert_refused(store, SessionClosed, credit_win, app, "w1", sid, "round-1", 10)
    assert_refused(store, SessionClosed, refund, app, "f1", sid, "round-1", 10)
    assert app.session_balance(sid) == 0


def test_a_closed_session_refuses_a_stake_as_closed_before_checking_funds(
    store: Store, app: Casino
) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    app.close_session("c1", sid)

    assert_refused(store, SessionClosed, stake, app, "k1", sid, "round-1", 10_000)


@pytest.mark.parametrize(
    "session_id",
    [
        pytest.param(str(uuid.uuid4()), id="unknown-uuid"),
        pytest.param("not-a-session", id="malformed"),
        pytest.param(str(account_id_for("ann")), id="an-account-id"),
    ],
)
def test_commands_for_an_unknown_session_are_refused(
    store: Store, app: Casino, session_id: str
) -> None:
    funded_player(app)
    open_session(app)

    assert_refused(store, SessionNotFound, stake, app, "k1", session_id, "round-1", 10)
    assert_refused(store, SessionNotFound, credit_win, app, "w1", session_id, "round-1", 10)
    assert_refused(store, SessionNotFound, refund, app, "f1", session_id, "round-1", 10)
    assert_refused(store, SessionNotFound, app.close_session, "c1", session_id)
    with pytest.raises(SessionNotFound):
        app.session_balance(session_id)


@pytest.mark.parametrize("round_id", ["", None, 7])
def test_session_money_commands_need_a_round_id(
    store: Store, app: Casino, round_id: object
) -> None:
    funded_player(app)
    sid = open_session(app)

    assert_refused(store, InvalidRequest, stake, app, "k1", sid, round_id, 10)
    assert_refused(store, InvalidRequest, credit_win, app, "w1", sid, round_id, 10)
    assert_refused(store, InvalidRequest, refund, app, "f1", sid, round_id, 10)


# -- amounts --------------------------------------------------------------------------

BAD_AMOUNTS: list[object] = [0, -1, -500, 1.0, 0.5, Decimal(10), True, False, "100", None]

AMOUNT_COMMANDS: dict[str, Callable[[Casino, str, str, Any], Any]] = {
    "deposit": lambda app, rid, sid, amount: app.deposit(rid, "ann", amount),
    "withdraw": lambda app, rid, sid, amount: app.withdraw(rid, "ann", amount),
    "buy-in": lambda app, rid, sid, amount: app.open_session(rid, "ann", amount),
    "stake": lambda app, rid, sid, amount: stake(app, rid, sid, "round-1", amount),
    "credit_win": lambda app, rid, sid, amount: credit_win(app, rid, sid, "round-1", amount),
    "refund": lambda app, rid, sid, amount: refund(app, rid, sid, "round-1", amount),
}


@pytest.mark.parametrize("command", list(AMOUNT_COMMANDS))
def test_amounts_that_are_not_positive_integers_are_refused(
    store: Store, app: Casino, command: str
) -> None:
    funded_player(app)
    sid = open_session(app)
    run = AMOUNT_COMMANDS[command]

    for n, amount in enumerate(BAD_AMOUNTS):
        err = assert_refused(store, InvalidAmount, run, app, f"bad-{n}", sid, amount)
        assert err.code == "invalid-amount", amount

    assert app.account_balance("ann") == 600
    assert app.session_balance(sid) == 400


def test_an_amount_refused_as_invalid_does_not_use_up_its_request_id(app: Casino) -> None:
    funded_player(app, deposit=1_000)
    with pytest.raises(InvalidAmount):
        app.deposit("d1", "ann", 0)

    assert app.deposit("d1", "ann", 5).balance == 1_005


def test_a_request_id_refused_for_lack_of_funds_can_be_used_again(
    store: Store, app: Casino
) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    assert_refused(store, InsufficientFunds, stake, app, "k1", sid, "round-1", 401)

    assert stake(app, "k1", sid, "round-1", 400)["balance"] == 0


@pytest.mark.parametrize("request_id", ["", "x" * 201, None, 7])
def test_a_malformed_request_id_is_refused(store: Store, app: Casino, request_id: object) -> None:
    funded_player(app)

    assert_refused(store, InvalidRequest, app.deposit, request_id, "ann", 10)


# -- idempotency ----------------------------------------------------------------------


def test_the_same_request_id_with_a_different_body_is_refused(store: Store, app: Casino) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    other = open_session(app, buy_in=100, rid="buy-in-2")
    stake(app, "k1", sid, "round-1", 100)

    assert_refused(store, IdempotencyConflict, stake, app, "k1", sid, "round-1", 101)
    assert_refused(store, IdempotencyConflict, stake, app, "k1", sid, "round-2", 100)
    assert_refused(store, IdempotencyConflict, stake, app, "k1", other, "round-1", 100)
    assert_refused(store, IdempotencyConflict, credit_win, app, "k1", sid, "round-1", 100)
    assert_refused(store, IdempotencyConflict, app.deposit, "k1", "ann", 100)
    assert_refused(store, IdempotencyConflict, app.close_session, "k1", sid)
    assert app.session_balance(sid) == 300


def test_an_idempotency_conflict_names_the_request_id(store: Store, app: Casino) -> None:
    funded_player(app)

    err = assert_refused(store, IdempotencyConflict, app.deposit, "deposit-ann", "ann", 1)

    assert err.ids == {"request_id": "deposit-ann"}


def test_the_same_request_id_with_the_same_body_returns_the_original_result(
    store: Store, app: Casino
) -> None:
    funded_player(app)
    sid = open_session(app, buy_in=400)
    first = stake(app, "k1", sid, "round-1", 100)
    credit_win(app, "w1", sid, "round-1", 50)
    before = raw_rows(store)

    again = stake(app, "k1", sid, "round-1", 100)

    assert again == first
    assert again["balance"] == 300  # the balance recorded then, not the one now
    assert raw_rows(store) == before
    assert app.session_balance(sid) == 350
