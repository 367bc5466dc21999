"""One process at a time runs the live tables' runners (ledger.runner_lease): the lease
passes on when its holder lets go or its connection dies; without it a process stands by."""

from __future__ import annotations

import psycopg
import pytest

from api.table_runners import TableRunners
from ledger.runner_lease import AlwaysHeld, RunnerLease, lease_for
from tests.conftest import PG_URL, Store


def test_one_holder_and_the_lease_passes_on(store: Store) -> None:
    first, second = store.open(), store.open()  # two processes' applications, one log
    if store.kind == "sqlite":  # one process: nobody else could run the runners
        assert isinstance(lease_for(first.recorder), AlwaysHeld)
        assert lease_for(first.recorder).holds_now() is True
        return
    a = RunnerLease(first.recorder, retry_seconds=0, check_seconds=0)
    b = RunnerLease(second.recorder, retry_seconds=0, check_seconds=0)
    try:
        assert a.holds_now() is False  # asking does not take it
        assert a.held() is True
        assert b.held() is False
        assert (a.holds_now(), b.holds_now()) == (True, False)
        assert a.held() is True  # still held, checked on its connection
        a.release()
        assert a.holds_now() is False
        assert b.held() is True
        assert a.held() is False
        # the holder's connection dies (a killed process): the lock goes with it
        assert b._kept is not None
        pid = b._kept[1].info.backend_pid
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert b.held() is False
        assert a.held() is True
    finally:
        a.release()
        b.release()


class Fixed:
    def __init__(self, held: bool) -> None:
        self.holding = held
        self.released = 0

    def held(self) -> bool:
        return self.holding

    def holds_now(self) -> bool:
        return self.holding

    def release(self) -> None:
        self.released += 1


class Broken(Fixed):
    def held(self) -> bool:
        raise psycopg.OperationalError("the store is down")


@pytest.mark.parametrize("kind", [Fixed, Broken], ids=["standby", "store-down"])
def test_a_process_without_the_lease_ticks_only_now_and_then(
    store: Store, kind: type[Fixed]
) -> None:
    lease = kind(False)
    now = [100.0]
    runners = TableRunners(store.open(), lease=lease, standby_seconds=2.0, monotonic=lambda: now[0])
    turns = []
    for _ in range(40):  # 4 s at the runner's 0.1 s interval
        turns.append(runners.turn())
        now[0] += 0.1
    assert sum(turns) == 2  # at 100.0 and at 102.0
    runners.stop()
    assert lease.released == 1


def test_the_holder_ticks_every_time(store: Store) -> None:
    lease = Fixed(True)
    runners = TableRunners(store.open(), lease=lease, monotonic=lambda: 0.0)
    assert all(runners.turn() for _ in range(20))
