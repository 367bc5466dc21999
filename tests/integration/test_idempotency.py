"""At most once (DESIGN §2.2): a request id moves money once, across retries, restarts and
concurrent senders, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from ledger import envelope
from ledger.casino import Casino
from ledger.errors import IdempotencyConflict
from ledger.results import AccountMoved
from tests.conftest import Store
from tests.integration.test_ledger_rules import raw_rows
from tests.money import credit_win, refund, stake

CHECKPOINT = "croupier/checkpoint/sealed@1"
REPLAYS = 100


def movement_rows(store: Store) -> list[tuple[str, dict[str, Any]]]:
    """(topic, movement) of every stored event that moves money."""
    out = []
    for _, _, _, topic, state in raw_rows(store):
        payload = json.loads(envelope.decode(state).payload)
        if "movement" in payload:
            out.append((topic, payload["movement"]))
    return out


def log_without_checkpoints(store: Store) -> list[tuple[Any, ...]]:
    """The rows a command can write: closing the app adds a checkpoint, nothing else."""
    return [row for row in raw_rows(store) if row[3] != CHECKPOINT]


def prepare(app: Casino) -> str:
    app.open_account("open", "ann", "EUR")
    app.deposit("fund", "ann", 1_000)
    sid = str(app.open_session("buy-in", "ann", 400).session_id)
    stake(app, "stake-0", sid, "round-0", 10)
    return sid


# name -> (the replayed command, the topic of the one movement it writes)
COMMANDS: dict[str, tuple[Callable[[Casino, str], Any], str]] = {
    "deposit": (lambda app, sid: app.deposit("rid", "ann", 50), "croupier/account/deposited@1"),
    "withdraw": (lambda app, sid: app.withdraw("rid", "ann", 50), "croupier/account/withdrawn@1"),
    "buy-in": (
        lambda app, sid: app.open_session("rid", "ann", 50),
        "croupier/account/session-funded@1",
    ),
    "stake": (
        lambda app, sid: stake(app, "rid", sid, "round-1", 50),
        "croupier/session/stake-debited@1",
    ),
    "credit_win": (
        lambda app, sid: credit_win(app, "rid", sid, "round-1", 50),
        "croupier/session/win-credited@1",
    ),
    "refund": (
        lambda app, sid: refund(app, "rid", sid, "round-1", 50),
        "croupier/session/refunded@1",
    ),
    "close_session": (
        lambda app, sid: app.close_session("rid", sid),
        "croupier/account/session-returned@1",
    ),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_request_replayed_100_times_across_a_restart_moves_money_once(
    store: Store, command: str
) -> None:
    run, topic = COMMANDS[command]
    app = store.open()
    sid = prepare(app)
    moves_before = movement_rows(store)
    first = run(app, sid)
    log_after_first = log_without_checkpoints(store)
    balances = (app.account_balance("ann"), app.session_balance(sid))

    results = [run(app, sid) for _ in range(REPLAYS // 2 - 1)]
    app.close()
    restarted = store.open()  # a new process on the same store: cold caches
    results += [run(restarted, sid) for _ in range(REPLAYS // 2)]

    assert results == [first] * (REPLAYS - 1)
    new_moves = movement_rows(store)[len(moves_before) :]
    assert [t for t, _ in new_moves] == [topic]
    assert log_without_checkpoints(store) == log_after_first
    assert (restarted.account_balance("ann"), restarted.session_balance(sid)) == balances


def test_a_request_id_reused_with_a_different_body_after_a_restart_is_refused(
    store: Store,
) -> None:
    app = store.open()
    prepare(app)
    app.deposit("rid", "ann", 50)
    app.close()
    restarted = store.open()
    before = raw_rows(store)

    with pytest.raises(IdempotencyConflict):
        restarted.deposit("rid", "ann", 51)

    assert raw_rows(store) == before
    assert restarted.account_balance("ann") == 650


@pytest.mark.parametrize("apps", [1, 2], ids=["one-app", "two-apps"])
def test_twenty_concurrent_senders_of_one_deposit_request_move_money_once(
    store: Store, apps: int
) -> None:
    casinos = [store.open() for _ in range(apps)]
    casinos[0].open_account("open", "ann", "EUR")
    senders = 20
    barrier = threading.Barrier(senders)
    results: list[Any] = [None] * senders
    errors: list[BaseException] = []

    def send(i: int) -> None:
        app = casinos[i % apps]
        barrier.wait()
        try:
            results[i] = app.deposit("the-one-deposit", "ann", 75)
        except BaseException as e:  # collected and re-raised by the test thread
            errors.append(e)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert results == [AccountMoved(player_id="ann", balance=75)] * senders
    moves = movement_rows(store)
    assert [topic for topic, _ in moves] == ["croupier/account/deposited@1"]
    assert moves[0][1]["amount"] == 75
    assert all(app.account_balance("ann") == 75 for app in casinos)


def test_concurrent_senders_of_one_request_id_with_two_bodies_get_one_answer(
    store: Store,
) -> None:
    casinos = [store.open(), store.open()]
    casinos[0].open_account("open", "ann", "EUR")
    senders = 20
    barrier = threading.Barrier(senders)
    outcomes: list[tuple[int, Any]] = [(0, None)] * senders

    def send(i: int) -> None:
        amount = 75 if i % 2 else 76
        barrier.wait()
        try:
            outcomes[i] = (amount, casinos[i % 2].deposit("the-one-deposit", "ann", amount))
        except IdempotencyConflict as e:
            outcomes[i] = (amount, e)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    moves = movement_rows(store)
    assert [topic for topic, _ in moves] == ["croupier/account/deposited@1"]
    winner = moves[0][1]["amount"]
    for amount, outcome in outcomes:
        if amount == winner:
            assert outcome == AccountMoved(player_id="ann", balance=winner)
        else:
            assert isinstance(outcome, IdempotencyConflict)
    assert casinos[1].account_balance("ann") == winner
