"""Benchmark: reading a page of the log's notifications on PostgreSQL, the library's way
against ``AppendOnlyPostgresRecorder.select_notifications`` (tuples, in binary).

The sealer and the read side's runner read every row of the log a page at a time. This
writes ``rows`` events of ``size`` bytes into a throw-away schema, then reads them as one
page both ways, alternating, ``repeats`` times each, and prints the median, fastest and
slowest read of each and their ratio, and records the run (``bench/record.py``; the
library's way is the baseline).

    python bench/bench_notifications.py [rows] [size] [repeats]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence

import psycopg
from eventsourcing.persistence import Notification, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from record import Run  # bench/record.py: this script's folder is on the path

from ledger.store import AppendOnlyPostgresRecorder

PG_URL = os.environ.get("CROUPIER_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def timed(read: Callable[[], Sequence[Notification]], rows: int) -> float:
    t0 = time.perf_counter()
    got = read()
    elapsed = time.perf_counter() - t0
    assert len(got) == rows
    return elapsed


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 800
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    run = Run("bench_notifications", f"rows={rows} size={size}")
    schema = "bench_notes_" + uuid.uuid4().hex[:8]
    info = psycopg.conninfo.conninfo_to_dict(PG_URL)
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        store = PostgresDatastore(
            str(info.get("dbname", "test")),
            str(info.get("host", "127.0.0.1")),
            int(info.get("port") or 5432),
            str(info.get("user", "postgres")),
            str(info.get("password", "")),
            schema=schema,
            pool_size=4,
        )
        recorder = AppendOnlyPostgresRecorder(store, events_table_name="casino_events")
        recorder.create_table()
        for start in range(0, rows, 500):
            batch = min(500, rows - start)
            recorder.insert_events(
                [
                    StoredEvent(uuid.uuid4(), 1, "croupier/bench@1", os.urandom(size))
                    for _ in range(batch)
                ]
            )
        library = PostgresApplicationRecorder.select_notifications.__wrapped__
        ways: dict[str, Callable[[], Sequence[Notification]]] = {
            "library (text, dict rows)": lambda: library(recorder, 1, rows),
            "croupier (binary, tuples)": lambda: recorder.select_notifications(1, rows),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(repeats):
            for name, read in ways.items():
                times[name].append(timed(read, rows))
        print(f"a page of {rows:,} notifications of {size} bytes, {repeats} reads each way:")
        for name, ts in times.items():
            print(
                f"  {name}: median {statistics.median(ts) * 1e3:.2f} ms "
                f"(fastest {min(ts) * 1e3:.2f}, slowest {max(ts) * 1e3:.2f})"
            )
        lib, ours = (statistics.median(ts) for ts in times.values())
        print(f"  croupier / library: {ours / lib:.2f}; load average {os.getloadavg()[0]:.2f}")
        run.done(
            {"ms_per_page": round(ours * 1e3, 2), "ratio": round(ours / lib, 2)},
            {"ms_per_page": round(lib * 1e3, 2)},
        )
        store.close()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
