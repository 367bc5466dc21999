"""With ``croupier serve --workers 2`` one worker does the log's upkeep: the holder of the
runners' lease folds the views, runs the read side's catch-up and seals the checkpoints
(ledger/runner_lease.py). Killed, it hands the upkeep over with the lease: the views
follow the log and the checkpoints go on, written by another process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from ledger.contracts import CHECKPOINT_SEALED
from ledger.runner_lease import lock_name
from tests.conftest import PG_URL, Store, _make_store
from tests.integration.test_workers import _workers, launch_two_workers

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Store]:
    yield from _make_store("postgres", tmp_path)


def _lease_holder(
    schema: str, workers: list[int], name: Callable[[str, str], str] = lock_name
) -> int | None:
    """The worker whose database connection holds the runners' lease (or the lock
    ``name`` names), if one does: the lock's backend, its client port, the socket with
    that port, the worker with that socket open."""
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        key = conn.execute(
            "SELECT hashtextextended(%s, 0)", (name(schema, "casino_events"),)
        ).fetchone()
        assert key is not None
        row = conn.execute(
            "SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s",
            ((key[0] >> 32) & 0xFFFFFFFF, key[0] & 0xFFFFFFFF),
        ).fetchone()
    if row is None:
        return None
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == row[0]:
            inodes.add(f"socket:[{fields[9]}]")
    for pid in workers:
        fds = Path(f"/proc/{pid}/fd")
        for fd in fds.iterdir():
            try:
                if os.readlink(fd) in inodes:
                    return pid
            except OSError:  # closed meanwhile
                continue
    return None


def _log(schema: str) -> tuple[int, dict[str, int], int]:
    """The log's head, each view's position, the newest checkpoint's number."""
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        head = conn.execute(f"SELECT MAX(notification_id) FROM {schema}.casino_events")
        positions = conn.execute(
            f"SELECT application_name, notification_id FROM {schema}.casino_tracking "
            "WHERE application_name LIKE 'casino:%%'"
        )
        views = {name: int(at) for name, at in positions.fetchall()}
        sealed = conn.execute(
            f"SELECT COUNT(*) FROM {schema}.casino_events WHERE topic = %s",
            (CHECKPOINT_SEALED,),
        )
        return int(head.fetchone()[0]), views, int(sealed.fetchone()[0])  # type: ignore[index]


def _until(what: str, check: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_upkeep_passes_on_with_the_lease_when_its_holder_is_killed(pg: Store) -> None:
    assert pg.schema is not None
    schema = pg.schema
    _, base, operator, proc = launch_two_workers(pg)
    try:
        workers = _workers(proc.pid)
        assert len(workers) == 2
        _until("a worker takes the lease", lambda: _lease_holder(schema, workers) is not None)
        holder = _lease_holder(schema, workers)
        assert holder is not None

        def deposits(prefix: str) -> None:
            # new connections each: the kernel hands them to either worker
            for n in range(20):
                with httpx.Client(base_url=base, timeout=30) as c:
                    r = c.post(
                        "/v1/accounts/pia/deposits",
                        json={"amount": 100},
                        headers={
                            "Authorization": f"Bearer {operator}",
                            "Idempotency-Key": f"{prefix}-{n}",
                        },
                    )
                    assert r.status_code == 200, r.text

        with httpx.Client(base_url=base, timeout=30) as c:
            opened = c.post(
                "/v1/accounts",
                json={"player_id": "pia", "currency": "EUR"},
                headers={"Authorization": f"Bearer {operator}", "Idempotency-Key": "open"},
            )
            assert opened.status_code == 201, opened.text
        deposits("before")

        def caught_up() -> bool:
            head, views, _ = _log(schema)
            return set(views.values()) == {head}

        # nobody reads: the holder folds and catches up every worker's events
        _until("the views reach the head", caught_up)
        _, _, sealed_before = _log(schema)

        os.kill(holder, signal.SIGKILL)
        deposits("after")  # served by the worker left (and one the supervisor restarts)
        _until(
            "another worker takes the lease",
            lambda: _lease_holder(schema, _workers(proc.pid)) not in (None, holder),
        )
        assert holder not in _workers(proc.pid)
        _until("the views reach the head again", caught_up)
        _until("a checkpoint is sealed again", lambda: _log(schema)[2] > sealed_before)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
