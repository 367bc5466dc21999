"""Group commit (issue 14): commands waiting together share one transaction, and behave
exactly as if they had run one after another.

Batches are formed deterministically by holding the writer (as a running batch does)
while commands queue up behind it, then letting go: they all go into the next batch.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger import commands as c
from ledger.accounts import account_id_for
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.errors import IdempotencyConflict, InsufficientFunds, LedgerError
from ledger.requests import Request, request_aggregate_id
from ledger.results import AccountMoved
from ledger.rounds import CODE_ALPHABET
from ledger.unit_of_work import UnitOfWork
from tests.conftest import Seeded, Store, _make_store
from tests.integration.test_ledger_rules import count_topic

DEPOSITED = "croupier/account/deposited@1"


@contextmanager
def writer_held(app: Casino) -> Iterator[Callable[[Callable[[], Any]], list[Any]]]:
    """While held, commands wait; ``submit(call)`` starts one in a thread and returns once
    it is queued (so the batch keeps the order of submission). The outcomes list holds the
    result or the exception of each call once it has returned."""
    threads: list[threading.Thread] = []
    outcomes: list[Any] = []
    with app._queue_lock:
        app._writing = True

    def submit(call: Callable[[], Any]) -> list[Any]:
        slot = len(outcomes)
        outcomes.append(None)
        queued = len(app._waiting) + 1

        def run() -> None:
            try:
                outcomes[slot] = call()
            except Exception as e:  # the outcome the test compares
                outcomes[slot] = e

        t = threading.Thread(target=run)
        threads.append(t)
        t.start()
        while len(app._waiting) < queued:
            time.sleep(0.001)
        return outcomes

    try:
        yield submit
    finally:
        app._hand_over()
        for t in threads:
            t.join(timeout=60)


def funded(app: Casino, player: str, amount: int = 0) -> None:
    app.open_account(f"open-{player}", player, "EUR")
    if amount:
        app.deposit(f"fund-{player}", player, amount)


def test_commands_waiting_together_commit_in_one_batch_as_if_run_one_after_another(
    store: Store,
) -> None:
    app = store.open()
    funded(app, "ann")
    before = app.batches
    with writer_held(app) as submit:
        submit(lambda: app.deposit("d1", "ann", 100))
        submit(lambda: app.withdraw("w1", "ann", 150))  # more than the 100 deposited
        outcomes = submit(lambda: app.withdraw("w2", "ann", 40))
    assert app.batches == before + 1
    assert outcomes[0] == AccountMoved(player_id="ann", balance=100)
    assert isinstance(outcomes[1], InsufficientFunds)  # refused, and fails no other
    assert outcomes[2] == AccountMoved(player_id="ann", balance=60)
    assert app.account_balance("ann") == 60
    # the refused withdrawal left nothing: no request record, so its id is still free
    assert app.find(Request, request_aggregate_id("operator", "w1")) is None
    assert app.withdraw("w1", "ann", 10) == AccountMoved(player_id="ann", balance=50)


def test_the_same_request_id_twice_in_one_batch_moves_money_once(store: Store) -> None:
    app = store.open()
    funded(app, "ann")
    with writer_held(app) as submit:
        submit(lambda: app.deposit("d1", "ann", 100))
        submit(lambda: app.deposit("d1", "ann", 100))
        outcomes = submit(lambda: app.deposit("d1", "ann", 999))  # same id, other body
    assert outcomes[0] == outcomes[1] == AccountMoved(player_id="ann", balance=100)
    assert isinstance(outcomes[2], IdempotencyConflict)
    assert app.account_balance("ann") == 100
    assert count_topic(store, DEPOSITED) == 1


def test_a_retry_of_a_recorded_request_in_a_batch_gets_its_result_and_the_others_commit(
    store: Store,
) -> None:
    app = store.open()
    funded(app, "ann")
    first = app.deposit("d1", "ann", 100)
    with writer_held(app) as submit:
        submit(lambda: app.deposit("d2", "ann", 5))
        submit(lambda: app.deposit("d1", "ann", 100))  # a client retry of d1
        submit(lambda: app.withdraw("d1", "ann", 1))  # d1 reused for another command
        outcomes = submit(lambda: app.deposit("d3", "ann", 7))
    assert outcomes[0] == AccountMoved(player_id="ann", balance=105)
    assert outcomes[1] == first
    assert isinstance(outcomes[2], IdempotencyConflict)
    assert outcomes[3] == AccountMoved(player_id="ann", balance=112)
    assert app.account_balance("ann") == 112
    assert count_topic(store, DEPOSITED) == 3


def _comparable(outcome: Any) -> Any:
    if isinstance(outcome, Exception):
        return type(outcome).__name__
    return {
        k: getattr(outcome, k) for k in ("status", "stake", "payout", "outcome", "balance", "seed")
    }


def test_two_commands_on_one_session_in_one_batch_play_exactly_as_serially(
    seeded: Seeded,
) -> None:
    seeds = [bytes([7]) * 32, bytes([8]) * 32]
    serial_app, batch_app = seeded(*seeds), seeded(*seeds)
    funded(serial_app, "ann", 10_000)
    sid = str(serial_app.open_session("s-ann", "ann", 5_000).session_id)
    funded(batch_app, "bob", 10_000)
    sid_b = str(batch_app.open_session("s-bob", "bob", 5_000).session_id)

    serial = _outcomes(_red_dog_steps_calls(serial_app, sid))
    before = batch_app.batches
    with writer_held(batch_app) as submit:
        for call in _red_dog_steps_calls(batch_app, sid_b):
            outcomes = submit(call)
    assert batch_app.batches == before + 1
    assert [_comparable(o) for o in outcomes] == [_comparable(o) for o in serial]
    assert batch_app.session_balance(sid_b) == serial_app.session_balance(sid)


def _red_dog_steps_calls(app: Casino, sid: str) -> list[Callable[[], Any]]:
    return [
        lambda: app.red_dog_bet("bet", sid, 100),
        lambda: app.red_dog_see("see", sid),
        lambda: app.red_dog_bet("bet-2", sid, 100),
    ]


def _outcomes(calls: Any) -> list[Any]:
    out: list[Any] = []
    for call in calls:
        try:
            out.append(call())
        except LedgerError as e:
            out.append(e)
    return out


# -- many threads on overlapping accounts ---------------------------------------------------

PLAYERS = ["ann", "bob", "cid"]
THREADS = 12
PER_THREAD = 15


Done = dict[str, tuple[str, str, int, Any]]  # request id -> (kind, player, amount, outcome)
REFUSED = "refused"


def client_commands(app: Casino, prefix: str, seed: int, done: Done, lock: threading.Lock) -> None:
    rng = random.Random(seed)
    for n in range(PER_THREAD):
        rid, player = f"{prefix}-{n}", rng.choice(PLAYERS)
        kind = rng.choice(["deposit", "withdraw", "buy-in"])
        amount = rng.randint(1, 60)
        try:
            if kind == "deposit":
                out: Any = app.deposit(rid, player, amount).balance
            elif kind == "withdraw":
                out = app.withdraw(rid, player, amount).balance
            else:
                out = app.open_session(rid, player, amount).account_balance
        except InsufficientFunds:
            out = REFUSED
        with lock:
            done[rid] = (kind, player, amount, out)


def run_clients(app: Casino, prefix: str, threads: int) -> Done:
    done: Done = {}
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def client(t: int) -> None:
        barrier.wait()
        client_commands(app, f"{prefix}{t}", hash((prefix, t)) % 2**32, done, lock)

    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return done


def assert_serial_in_commit_order(store: Store, app: Casino, done: Done) -> None:
    """Replay the accepted commands one by one in the order their request records
    committed: every result must be the balance that serial execution gives; no balance
    goes below zero; a refusal recorded nothing; audit-cli's verify rebuilds the same
    balances from the movements."""
    position = {str(r.originator_id): r.notification_id for r in read_rows(store.db)}
    accepted = sorted(
        (rid for rid, d in done.items() if d[3] != REFUSED),
        key=lambda rid: position[str(request_aggregate_id("operator", rid))],
    )
    balance = dict.fromkeys(PLAYERS, 0)
    for rid in accepted:
        kind, player, amount, out = done[rid]
        balance[player] += amount if kind == "deposit" else -amount
        assert balance[player] >= 0, f"{rid} overdrew {player}"
        assert out == balance[player], f"{rid}: {out} but serially {balance[player]}"
    for rid, (_kind, _player, _amount, out) in done.items():
        if out == REFUSED:
            assert str(request_aggregate_id("operator", rid)) not in position
    for p in PLAYERS:
        assert app.account_balance(p) == balance[p]
    app.seal()
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings
    for p in PLAYERS:
        assert report.balances.get(f"account:{account_id_for(p)}", 0) == balance[p]


def test_many_threads_on_overlapping_accounts_equal_a_serial_execution_in_commit_order(
    store: Store,
) -> None:
    app = store.open()
    for p in PLAYERS:
        funded(app, p)
    done = run_clients(app, "t", THREADS)
    assert len(done) == THREADS * PER_THREAD
    assert app.batches < THREADS * PER_THREAD + len(PLAYERS)  # some commands shared a batch
    assert_serial_in_commit_order(store, app, done)


@pytest.fixture
def pg_store(tmp_path: Path) -> Iterator[Store]:
    """Several processes run on PostgreSQL only (SQLite is one process: README)."""
    yield from _make_store("postgres", tmp_path)


@pytest.mark.postgres
def test_two_processes_with_threads_on_overlapping_accounts_equal_a_serial_execution(
    pg_store: Store, tmp_path: Path
) -> None:
    store = pg_store
    setup = store.open()
    for p in PLAYERS:
        funded(setup, p)
    setup.close()
    pids = []
    for k in range(2):
        pid = os.fork()
        if pid == 0:  # a worker process with its own Casino (its own writer)
            code = 1
            try:
                app = bootstrap(store.settings(), keyring=store.keyring)
                done = run_clients(app, f"p{k}t", THREADS // 2)
                (tmp_path / f"done-{k}.json").write_text(json.dumps(done))
                app.close()
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        assert os.waitpid(pid, 0)[1] == 0
    done: Done = {}
    for k in range(2):
        done.update(
            {
                rid: tuple(d)
                for rid, d in json.loads((tmp_path / f"done-{k}.json").read_text()).items()
            }
        )  # type: ignore[misc]
    assert len(done) == THREADS * PER_THREAD
    assert_serial_in_commit_order(store, store.open(), done)


# -- a crash in the middle of a batch -------------------------------------------------------

CRASH_DEPOSITS = 12


class CrashingCasino(Casino):
    """Dies (``os._exit``, no clean-up) on its second save: before it, or after COMMIT."""

    name = Casino.name  # the same tables (the library names them after the class)
    crash_when = "before"
    saves = 0

    def save(self, *objs: Any, **kwargs: Any) -> Any:
        type(self).saves += 1
        if type(self).saves == 2 and self.crash_when == "before":
            os._exit(17)
        recordings = super().save(*objs, **kwargs)
        if type(self).saves == 2:
            os._exit(17)
        return recordings


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_crash_in_a_batch_acknowledges_nothing_not_durable_and_retries_move_money_once(
    store: Store, when: str
) -> None:
    setup = store.open()
    funded(setup, "ann")
    setup.close()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh Casino, concurrent deposits, acks into the pipe
        try:
            os.close(read_fd)
            CrashingCasino.crash_when = when
            app = bootstrap(store.settings(), keyring=store.keyring, application=CrashingCasino)
            app.deposit("warm-up", "ann", 1)  # the first save

            def deposit(n: int) -> None:
                app.deposit(f"dep-{n}", "ann", 10)
                os.write(write_fd, f"dep-{n}\n".encode())

            with writer_held(app) as submit:  # every deposit in the batch that crashes
                for n in range(CRASH_DEPOSITS):
                    submit(lambda n=n: deposit(n))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(3)  # never reached when the crash happens as it should
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        acked = pipe.read().split()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 17
    assert acked == []  # the batch died before any of its commands was answered

    app = store.open()
    durable = {
        f"dep-{n}"
        for n in range(CRASH_DEPOSITS)
        if app.find(Request, request_aggregate_id("operator", f"dep-{n}"))
    }
    assert durable == (set() if when == "before" else {f"dep-{n}" for n in range(CRASH_DEPOSITS)})
    # every client retries with its request id: the money moves once, whatever happened
    for n in range(CRASH_DEPOSITS):
        app.deposit(f"dep-{n}", "ann", 10)
        app.deposit(f"dep-{n}", "ann", 10)
    assert app.account_balance("ann") == 1 + 10 * CRASH_DEPOSITS
    assert count_topic(store, DEPOSITED) == 1 + CRASH_DEPOSITS


class ClashingCodes:
    """The random part of the first ``clashes`` game codes is the same: a clash (in place
    of :func:`ledger.rounds.random_code`)."""

    def __init__(self, clashes: int) -> None:
        self.left = clashes
        self.rng = random.Random(1)

    def __call__(self, length: int) -> str:
        if self.left > 0:
            self.left -= 1
            return CODE_ALPHABET[0] * length
        return "".join(self.rng.choice(CODE_ALPHABET) for _ in range(length))


def test_two_rounds_drawing_the_same_game_code_in_one_batch_each_stay_their_sessions(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = store.open()
    sids = {}
    for p in ("ann", "bob"):
        funded(app, p, 10_000)
        sids[p] = str(app.open_session(f"s-{p}", p, 5_000).session_id)
    clashing = ClashingCodes(2)
    monkeypatch.setattr("ledger.rounds.random_code", clashing)
    with writer_held(app) as submit:
        submit(lambda: app.red_dog_bet("bet", sids["ann"], 100))
        outcomes = submit(lambda: app.red_dog_bet("bet", sids["bob"], 100))
    assert not any(isinstance(o, Exception) for o in outcomes), outcomes
    assert clashing.left == 0  # both drew the same code first
    assert outcomes[0].code != outcomes[1].code
    for p, out in zip(("ann", "bob"), outcomes, strict=True):
        rnd = app.find_round(out.code)
        assert rnd.session_id == sids[p]
        assert app.session_balance(sids[p]) == out.balance


@dataclass(frozen=True)
class DepositTwice(c.Command):
    """A test-only command whose handler issues another command through ``command``."""

    name: ClassVar[str] = "test_deposit_twice"
    player_id: str


def test_a_command_issued_from_inside_a_handler_runs_alone_instead_of_waiting_for_itself(
    store: Store,
) -> None:
    holder: list[Casino] = []

    def deposit_twice(uow: UnitOfWork, cmd: DepositTwice) -> dict[str, Any]:
        inner = holder[0].deposit(f"inner-{cmd.player_id}", cmd.player_id, 5)
        return {"inner": inner.balance}

    app = bootstrap(
        store.settings(),
        keyring=store.keyring,
        extra_handlers=lambda _rounds: [DepositTwice.handled_by(deposit_twice)],
    )
    store.apps.append(app)
    holder.append(app)
    funded(app, "ann")
    assert app.command("outer", DepositTwice("ann")) == {"inner": 5}
    assert app.account_balance("ann") == 5
    assert app.command("outer", DepositTwice("ann")) == {"inner": 5}  # recorded: once
    assert app.account_balance("ann") == 5
