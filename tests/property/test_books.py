"""The books balance (DESIGN §2.2, §2.3, §2.5, §2.6) under random command sequences.

A hypothesis state machine drives a real Casino with deposits, withdrawals, buy-ins,
stakes, wins, refunds, closes, replays, reused request ids and restarts, valid or not,
and keeps a plain model of every balance. After every step:

- the model's balances equal the app's, and none is negative;
- a refused command raised the error the model predicts and left the raw rows
  byte-for-byte unchanged;
- replaying the ``movement`` of every raw row (no domain code: just the envelope's JSON
  payload) gives ledgers that sum to zero per currency, equal the live balance of every
  account and session, and agree with the ``balance`` each event recorded.

Runs on SQLite always and, more briefly, on PostgreSQL.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ledger import envelope
from ledger.accounts import account_id_for
from ledger.bootstrap import bootstrap
from ledger.errors import (
    AccountExists,
    AccountNotFound,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidAmount,
    LedgerError,
    SessionClosed,
    SessionNotFound,
)
from ledger.keys import Keyring
from ledger.settings import Settings
from tests.conftest import PG_URL, require_postgres
from tests.money import credit_win, refund, stake

CURRENCY = "EUR"
PLAYERS = ["ann", "bob"]
UNKNOWN_PLAYER = "zed"  # never gets an account
KEYRING = Keyring.generate()

# Money moves with no round are test-only helpers (not Casino methods) since issue 12.
MONEY = {"stake": stake, "credit_win": credit_win, "refund": refund}


def _weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Pick a strategy with the given weights; shrinks towards the first (the valid) one."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda i: table[i])


players = _weighted((9, st.sampled_from(PLAYERS)), (1, st.just(UNKNOWN_PLAYER)))
amounts = _weighted(
    (6, st.integers(1, 300)),  # usually affordable
    (2, st.integers(301, 5_000)),  # often too large
    (1, st.sampled_from([0, -1, -250])),
    (1, st.sampled_from([1.0, 2.5, True, False, "10", None])),
)
# which session a command names: an open one, a closed one, or one that does not exist
session_picks = st.tuples(
    _weighted((8, st.just("open")), (1, st.just("closed")), (1, st.just("unknown"))),
    st.integers(0, 1_000),
)


def valid_amount(amount: object) -> bool:
    return type(amount) is int and amount > 0


@dataclass
class ModelSession:
    player: str
    balance: int
    closed: bool = False


@dataclass(frozen=True)
class Done:
    """A command that succeeded: replaying it must return ``result`` and move nothing."""

    method: str
    args: tuple[Any, ...]
    result: dict[str, Any]


class Books(RuleBasedStateMachine):
    kind: ClassVar[str] = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.schema: str | None = None
        database_url = None
        if self.kind == "postgres":
            import psycopg

            self.schema = "p_" + uuid.uuid4().hex[:12]
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {self.schema}")
            database_url = f"{PG_URL}?schema={self.schema}"
        self.settings = Settings(data_dir=Path(self.tmp.name), database_url=database_url)
        self.app = bootstrap(self.settings, keyring=KEYRING)
        self.conn = self._connect()
        self.requests = 0
        self.accounts: dict[str, int] = {}
        self.sessions: dict[str, ModelSession] = {}
        self.bank = 0  # outside money: minus what was deposited, plus what was withdrawn
        self.house = 0  # stakes taken minus wins and refunds paid
        self.done: list[Done] = []

    # -- plumbing ---------------------------------------------------------------------

    def _connect(self) -> Any:
        if self.schema is None:
            import sqlite3

            return sqlite3.connect(Path(self.tmp.name) / "casino.sqlite", isolation_level=None)
        import psycopg

        return psycopg.connect(PG_URL, autocommit=True)

    def rows(self) -> list[tuple[Any, ...]]:
        if self.schema is None:
            sql = (
                "SELECT rowid, originator_id, originator_version, topic, state "
                "FROM stored_events ORDER BY rowid"
            )
        else:
            sql = (
                "SELECT notification_id, originator_id, originator_version, topic, state "
                f"FROM {self.schema}.casino_events ORDER BY notification_id"
            )
        return [(n, str(o), v, t, bytes(s)) for n, o, v, t, s in self.conn.execute(sql).fetchall()]

    def request_id(self) -> str:
        self.requests += 1
        return f"req-{self.requests}"

    def pick_session(self, pick: tuple[str, int]) -> str:
        state, index = pick
        closed = state == "closed"
        candidates = [sid for sid, s in self.sessions.items() if s.closed == closed]
        if state == "unknown" or not candidates:
            return str(uuid.uuid4())
        return candidates[index % len(candidates)]

    def command_of(self, method: str) -> Any:
        found = getattr(self.app, method, None)
        return found if found is not None else partial(MONEY[method], self.app)

    def run(self, refusal: type[LedgerError] | None, method: str, *args: Any) -> Any:
        """Run one command; a predicted refusal must happen and must write nothing."""
        command = self.command_of(method)
        if refusal is None:
            result = command(*args)
            self.done.append(Done(method, args, result))
            return result
        before = self.rows()
        try:
            command(*args)
        except LedgerError as e:
            assert type(e) is refusal, f"{method}{args}: expected {refusal.__name__}, got {e!r}"
        else:
            raise AssertionError(f"{method}{args} was accepted; expected {refusal.__name__}")
        assert self.rows() == before, f"refused {method}{args} changed the stored rows"
        return None

    @initialize()
    def players_with_money_and_a_session(self) -> None:
        for player in PLAYERS:
            self.open_account(player)
            self.deposit(player, 1_000)
        self.open_session("ann", 300)

    # -- accounts ---------------------------------------------------------------------

    @rule(player=st.sampled_from(PLAYERS))
    def open_account(self, player: str) -> None:
        refusal = AccountExists if player in self.accounts else None
        self.run(refusal, "open_account", self.request_id(), player, CURRENCY)
        self.accounts.setdefault(player, 0)

    @rule(player=players, amount=amounts)
    def deposit(self, player: str, amount: Any) -> None:
        refusal: type[LedgerError] | None = None
        if not valid_amount(amount):
            refusal = InvalidAmount
        elif player not in self.accounts:
            refusal = AccountNotFound
        result = self.run(refusal, "deposit", self.request_id(), player, amount)
        if result is not None:
            self.accounts[player] += amount
            self.bank -= amount
            assert result.balance == self.accounts[player]

    @rule(player=players, amount=amounts)
    def withdraw(self, player: str, amount: Any) -> None:
        refusal: type[LedgerError] | None = None
        if not valid_amount(amount):
            refusal = InvalidAmount
        elif player not in self.accounts:
            refusal = AccountNotFound
        elif amount > self.accounts[player]:
            refusal = InsufficientFunds
        result = self.run(refusal, "withdraw", self.request_id(), player, amount)
        if result is not None:
            self.accounts[player] -= amount
            self.bank += amount
            assert result.balance == self.accounts[player]

    # -- sessions ---------------------------------------------------------------------

    @rule(player=players, buy_in=amounts)
    def open_session(self, player: str, buy_in: Any) -> None:
        refusal: type[LedgerError] | None = None
        if not valid_amount(buy_in):
            refusal = InvalidAmount
        elif player not in self.accounts:
            refusal = AccountNotFound
        elif buy_in > self.accounts[player]:
            refusal = InsufficientFunds
        result = self.run(refusal, "open_session", self.request_id(), player, buy_in)
        if result is not None:
            self.accounts[player] -= buy_in
            self.sessions[result.session_id] = ModelSession(player, buy_in)
            assert result.account_balance == self.accounts[player]

    def session_refusal(self, sid: str, amount: Any) -> type[LedgerError] | None:
        if not valid_amount(amount):
            return InvalidAmount
        if sid not in self.sessions:
            return SessionNotFound
        if self.sessions[sid].closed:
            return SessionClosed
        return None

    def _stake(self, sid: str, amount: Any) -> bool:
        refusal = self.session_refusal(sid, amount)
        if refusal is None and amount > self.sessions[sid].balance:
            refusal = InsufficientFunds
        result = self.run(refusal, "stake", self.request_id(), sid, f"r{self.requests}", amount)
        if result is None:
            return False
        self.sessions[sid].balance -= amount
        self.house += amount
        assert result["balance"] == self.sessions[sid].balance
        return True

    def _pay(self, method: str, sid: str, amount: Any) -> None:
        refusal = self.session_refusal(sid, amount)
        result = self.run(refusal, method, self.request_id(), sid, f"r{self.requests}", amount)
        if result is not None:
            self.sessions[sid].balance += amount
            self.house -= amount
            assert result["balance"] == self.sessions[sid].balance

    @rule(pick=session_picks, amount=amounts)
    def stake(self, pick: tuple[str, int], amount: Any) -> None:
        self._stake(self.pick_session(pick), amount)

    @rule(pick=session_picks, amount=amounts, method=st.sampled_from(["credit_win", "refund"]))
    def pay(self, pick: tuple[str, int], amount: Any, method: str) -> None:
        self._pay(method, self.pick_session(pick), amount)

    @rule(
        pick=session_picks,
        amount=amounts,
        outcome=st.sampled_from(["lose", "win", "push"]),
        multiple=st.integers(1, 5),
    )
    def play_round(self, pick: tuple[str, int], amount: Any, outcome: str, multiple: int) -> None:
        """A whole round: the stake, then a win (``multiple`` times the stake) or a refund."""
        sid = self.pick_session(pick)
        if not self._stake(sid, amount) or outcome == "lose":
            return
        if outcome == "win":
            self._pay("credit_win", sid, amount * multiple)
        else:
            self._pay("refund", sid, amount)

    @rule(pick=session_picks)
    def close_session(self, pick: tuple[str, int]) -> None:
        sid = self.pick_session(pick)
        refusal = self.session_refusal(sid, 1)
        result = self.run(refusal, "close_session", self.request_id(), sid)
        if result is not None:
            session = self.sessions[sid]
            assert result.final_balance == session.balance
            self.accounts[session.player] += session.balance
            session.balance, session.closed = 0, True
            assert result.account_balance == self.accounts[session.player]

    # -- retries and restarts ---------------------------------------------------------

    @precondition(lambda self: bool(self.done))
    @rule(index=st.integers(0, 10_000))
    def replay(self, index: int) -> None:
        done = self.done[index % len(self.done)]
        before = self.rows()
        assert self.command_of(done.method)(*done.args) == done.result
        assert self.rows() == before

    @precondition(lambda self: bool(self.done))
    @rule(index=st.integers(0, 10_000))
    def reuse_request_id_for_another_body(self, index: int) -> None:
        rid = self.done[index % len(self.done)].args[0]
        self.run(IdempotencyConflict, "withdraw", rid, UNKNOWN_PLAYER, 7)

    @rule()
    def restart(self) -> None:
        self.app.close()
        self.app = bootstrap(self.settings, keyring=KEYRING)

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def live_balances_equal_the_model(self) -> None:
        for player, balance in self.accounts.items():
            assert balance >= 0
            assert self.app.account_balance(player) == balance, player
        for sid, session in self.sessions.items():
            assert session.balance >= 0
            assert self.app.session_balance(sid) == session.balance, sid

    @invariant()
    def books_rebuilt_from_the_raw_log_balance_and_equal_the_live_ones(self) -> None:
        books: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for _, originator_id, version, topic, state in self.rows():
            payload = json.loads(envelope.decode(state).payload)
            move = payload.get("movement")
            if move is None:
                continue
            amount, ledgers = move["amount"], books[move["currency"]]
            assert type(amount) is int and amount > 0, (topic, move)
            ledgers[move["source"]] -= amount
            ledgers[move["destination"]] += amount
            # the balance an event records is its own aggregate's ledger after the movement
            me = str(uuid.UUID(originator_id))
            own = [side for side in (move["source"], move["destination"]) if side.endswith(me)]
            assert len(own) == 1, (topic, move)
            assert payload["balance"] == ledgers[own[0]], (topic, version, move)

        for currency, ledgers in books.items():
            assert sum(ledgers.values()) == 0, currency
        assert set(books) <= {CURRENCY}
        ledgers = books[CURRENCY]
        assert ledgers[f"bank:{CURRENCY}"] == self.bank
        assert ledgers[f"house:{CURRENCY}"] == self.house
        for player, balance in self.accounts.items():
            assert ledgers[f"account:{account_id_for(player)}"] == balance, player
        for sid, session in self.sessions.items():
            assert ledgers[f"session:{sid}"] == session.balance, sid
        known = {f"account:{account_id_for(p)}" for p in self.accounts}
        known |= {f"session:{sid}" for sid in self.sessions}
        known |= {f"bank:{CURRENCY}", f"house:{CURRENCY}"}
        assert set(ledgers) <= known

    def teardown(self) -> None:
        try:
            self.app.close()
            # a cold start rebuilds every balance from the log alone
            fresh = bootstrap(self.settings, keyring=KEYRING)
            try:
                for player, balance in self.accounts.items():
                    assert fresh.account_balance(player) == balance
                for sid, session in self.sessions.items():
                    assert fresh.session_balance(sid) == session.balance
            finally:
                fresh.close()
        finally:
            self.conn.close()
            if self.schema is not None:
                import psycopg

                with psycopg.connect(PG_URL, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            self.tmp.cleanup()


class PostgresBooks(Books):
    kind = "postgres"


def test_books_balance_and_replay_equals_live_on_sqlite() -> None:
    run_state_machine_as_test(
        Books,
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


@pytest.mark.postgres
def test_books_balance_and_replay_equals_live_on_postgres() -> None:
    require_postgres()
    run_state_machine_as_test(
        PostgresBooks,
        settings=settings(
            max_examples=12,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
