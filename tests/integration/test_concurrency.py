"""Concurrent stakes never overdraw a session (DESIGN §1.1 "reload and re-run", §2.3).

A session that can afford exactly ``AFFORDABLE`` stakes receives ``ATTEMPTS`` stakes at
once, each with its own request id: from threads sharing one Casino, from threads on two
Casinos, and (on PostgreSQL) from separate processes each running its own Casino.
"""

from __future__ import annotations

import multiprocessing
import queue
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.errors import InsufficientFunds, SessionClosed
from ledger.keys import Keyring, load_private_key
from ledger.settings import Settings
from tests.conftest import PG_URL, Store
from tests.integration.test_ledger_rules import count_topic
from tests.money import stake

STAKE_DEBITED = "croupier/session/stake-debited@1"
STAKE = 10
AFFORDABLE = 25
ATTEMPTS = 40
THREADS = 16
PROCESSES = 4

Outcome = tuple[str, Any]  # ("ok", new balance) | ("insufficient", "") | ("error", repr)


def attempt_stake(app: Casino, session_id: str, n: int) -> Outcome:
    try:
        result = stake(app, f"stake-{n}", session_id, f"round-{n}", STAKE)
    except InsufficientFunds:
        return ("insufficient", "")
    except Exception as e:  # reported by the test as an unexpected outcome
        return ("error", repr(e))
    return ("ok", result["balance"])


def fund_session(app: Casino) -> str:
    app.open_account("open", "ann", "EUR")
    app.deposit("fund", "ann", STAKE * AFFORDABLE)
    return str(app.open_session("buy-in", "ann", STAKE * AFFORDABLE).session_id)


def assert_exactly_the_affordable_stakes_succeeded(
    store: Store, app: Casino, session_id: str, outcomes: list[Outcome]
) -> None:
    assert len(outcomes) == ATTEMPTS
    assert [o for o in outcomes if o[0] == "error"] == []
    balances = sorted(balance for kind, balance in outcomes if kind == "ok")
    # each successful stake saw a different balance: no two were applied to the same state
    assert balances == [STAKE * k for k in range(AFFORDABLE)]
    assert sum(1 for kind, _ in outcomes if kind == "insufficient") == ATTEMPTS - AFFORDABLE
    assert app.session_balance(session_id) == 0
    assert count_topic(store, STAKE_DEBITED) == AFFORDABLE


def run_threads(apps: list[Casino], attempt: Callable[[Casino, int], Outcome]) -> list[Outcome]:
    """``ATTEMPTS`` numbered attempts shared out between ``THREADS`` threads, all at once."""
    attempts: queue.Queue[int] = queue.Queue()
    for n in range(ATTEMPTS):
        attempts.put(n)
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def player(i: int) -> None:
        app = apps[i % len(apps)]
        barrier.wait()
        while True:
            try:
                n = attempts.get_nowait()
            except queue.Empty:
                return
            outcome = attempt(app, n)
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=player, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


@pytest.mark.parametrize("apps", [1, 2], ids=["one-app", "two-apps"])
def test_concurrent_stakes_from_threads_never_overdraw_the_session(store: Store, apps: int) -> None:
    casinos = [store.open() for _ in range(apps)]
    sid = fund_session(casinos[0])

    outcomes = run_threads(casinos, lambda app, n: attempt_stake(app, sid, n))

    assert_exactly_the_affordable_stakes_succeeded(store, casinos[-1], sid, outcomes)


def test_concurrent_buy_ins_never_overdraw_the_account(store: Store) -> None:
    casinos = [store.open(), store.open()]
    casinos[0].open_account("open", "ann", "EUR")
    casinos[0].deposit("fund", "ann", STAKE * AFFORDABLE)

    def buy_in(app: Casino, n: int) -> Outcome:
        try:
            return ("ok", app.open_session(f"buy-in-{n}", "ann", STAKE).account_balance)
        except InsufficientFunds:
            return ("insufficient", "")
        except Exception as e:  # reported by the test as an unexpected outcome
            return ("error", repr(e))

    outcomes = run_threads(casinos, buy_in)

    assert [o for o in outcomes if o[0] == "error"] == []
    assert sorted(b for kind, b in outcomes if kind == "ok") == [
        STAKE * k for k in range(AFFORDABLE)
    ]
    assert casinos[0].account_balance("ann") == 0
    assert count_topic(store, "croupier/account/session-funded@1") == AFFORDABLE


def test_concurrent_closes_return_the_session_balance_once(store: Store) -> None:
    casinos = [store.open(), store.open()]
    sid = fund_session(casinos[0])
    stake(casinos[0], "stake", sid, "round-1", STAKE)

    def close(app: Casino, n: int) -> Outcome:
        try:
            return ("ok", app.close_session(f"close-{n}", sid).wire())
        except SessionClosed:
            return ("closed", "")
        except Exception as e:  # reported by the test as an unexpected outcome
            return ("error", repr(e))

    outcomes = run_threads(casinos, close)

    final = STAKE * (AFFORDABLE - 1)
    assert [o for o in outcomes if o[0] == "error"] == []
    assert [value for kind, value in outcomes if kind == "ok"] == [
        {"session_id": sid, "final_balance": final, "account_balance": final}
    ]
    assert casinos[1].account_balance("ann") == final
    assert count_topic(store, "croupier/account/session-returned@1") == 1


# -- several processes on one PostgreSQL schema ---------------------------------------


def keyring_parts(ring: Keyring) -> dict[str, Any]:
    """What a child process needs to rebuild the same keyring (picklable, no key objects)."""
    raw = ring.signing_key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    return {
        "signing_key_hex": raw.hex(),
        "sealing_kid": ring.sealing_kid,
        "sealing_key": ring.sealing_key,
    }


def keyring_from_parts(parts: dict[str, Any]) -> Keyring:
    from ledger.keys import key_id

    sk = load_private_key(parts["signing_key_hex"].encode())
    kid = parts["sealing_kid"]
    return Keyring(key_id(sk.public_key()), sk, kid, {kid: parts["sealing_key"]})


def stake_in_a_process(
    settings: dict[str, Any],
    parts: dict[str, Any],
    session_id: str,
    attempt_numbers: list[int],
    ready: Any,
    start: Any,
    results: Any,
) -> None:
    """Child process body: its own Casino on the shared schema, then the stakes."""
    app = bootstrap(Settings(**settings), keyring=keyring_from_parts(parts))
    try:
        ready.put(True)
        if not start.wait(timeout=60):
            raise TimeoutError("the parent never gave the start signal")
        results.put([attempt_stake(app, session_id, n) for n in attempt_numbers])
    except Exception as e:  # the parent reports a failed batch as an error outcome
        results.put([("error", repr(e))])
    finally:
        app.close()


def run_processes(store: Store, session_id: str) -> list[Outcome]:
    """Start every child, wait until each has opened its Casino, then release them at once."""
    ctx = multiprocessing.get_context("spawn")
    ready, start, results = ctx.Queue(), ctx.Event(), ctx.Queue()
    settings = {"data_dir": str(store.data_dir), "database_url": store.database_url}
    parts = keyring_parts(store.keyring)
    target: Callable[..., None] = stake_in_a_process
    procs = [
        ctx.Process(
            target=target,
            args=(
                settings,
                parts,
                session_id,
                list(range(p, ATTEMPTS, PROCESSES)),
                ready,
                start,
                results,
            ),
            daemon=True,
        )
        for p in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    outcomes: list[Outcome] = []
    try:
        for _ in procs:
            ready.get(timeout=60)
        start.set()
        for _ in procs:
            outcomes += results.get(timeout=60)
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
    assert [proc.exitcode for proc in procs] == [0] * PROCESSES
    return outcomes


@pytest.mark.postgres
@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_concurrent_stakes_from_processes_never_overdraw_the_session(store: Store) -> None:
    app = store.open()
    sid = fund_session(app)

    outcomes = run_processes(store, sid)

    assert_exactly_the_affordable_stakes_succeeded(store, app, sid, outcomes)


# -- start-up -------------------------------------------------------------------------

STARTERS = 8
START_ROUNDS = 4  # each on a store of its own: a race needs a few tries to show


@contextmanager
def another_empty_store(store: Store) -> Iterator[Settings]:
    """Settings for a new, empty store of the same kind as ``store``."""
    if store.database_url is None:
        with tempfile.TemporaryDirectory() as d:
            yield store.settings(data_dir=Path(d))
        return
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield store.settings(database_url=f"{PG_URL}?schema={schema}")
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def start_together(settings: Settings, keyring: Keyring) -> list[str]:
    """Open ``STARTERS`` Casinos at the same moment; return why any of them failed."""
    barrier = threading.Barrier(STARTERS)
    errors: list[str] = []
    apps: list[Casino] = []
    lock = threading.Lock()

    def start() -> None:
        barrier.wait()
        try:
            app = bootstrap(settings, keyring=keyring)
        except Exception as e:  # collected: the test reports every failed start
            with lock:
                errors.append(f"{type(e).__name__}: {e}")
            return
        with lock:
            apps.append(app)
            if settings.uses_postgres:  # started: a request's bound on the pool
                timeout = getattr(getattr(app.datastore, "pool", None), "timeout", None)
                if timeout != settings.store_timeout_seconds:
                    errors.append(f"pool timeout {timeout} after start")

    threads = [threading.Thread(target=start) for _ in range(STARTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for app in apps:
        app.close()
    return errors


@pytest.mark.parametrize("tables", ["first-deployment", "tables-exist"])
def test_casinos_starting_at_the_same_moment_on_one_store_all_start(
    store: Store, tables: str
) -> None:
    """Several workers (``croupier serve`` processes, replicas) may start together, on the
    first deployment (empty store) and on every restart after it."""
    errors: list[str] = []
    for _ in range(START_ROUNDS):
        with another_empty_store(store) as settings:
            if tables == "tables-exist":
                bootstrap(settings, keyring=store.keyring).close()
            errors += start_together(settings, store.keyring)

    assert errors == []
