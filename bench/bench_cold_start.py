"""Benchmark: the first command after a restart, with and without signed snapshots.

Builds, on SQLite and on PostgreSQL, a log holding a game session of ROUNDS rounds (about
3.5 events a round: round opened, stake, a win every other round, round closed) and an
account that funded and got back SESSIONS sessions (2 events each). The events go straight
through the application (the real aggregate methods and the signed store, 1,000 rounds
per save: one command per step would take many minutes); snapshots are taken as the
server takes them (every ``CROUPIER_SNAPSHOT_EVERY`` events, default 100).

Then, for each run, alternating, a *fresh process* (a restart: empty caches; the OS page
cache is warm) opens the application and times its first command:

- a Red Dog bet on the long session (the session is loaded: snapshot + the events after
  it, or every event), and
- a deposit to the account,

once with snapshots (the default) and once with ``CROUPIER_SNAPSHOT_EVERY=0`` (no snapshot
read: the events are replayed), printing each figure, the spread over the runs, the ratio
and the load average. It also times ``audit-cli verify``'s pass (one worker) over the same
log with and without its snapshot checks (their replay rides on the one pass).

    python bench/bench_cold_start.py [ROUNDS] [SESSIONS] [RUNS] [STORES]
    # defaults 20000 2000 3 sqlite,postgres

Uses CROUPIER_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test) in a
throw-away schema.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID, uuid4

import psycopg

from ledger.accounts import GameSession, account_id_for
from ledger.bootstrap import bootstrap
from ledger.requests import Request, body_digest, for_request, request_aggregate_id
from ledger.settings import Settings

T = TypeVar("T")
PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# -- building the log --------------------------------------------------------------------


def build(settings: Settings, rounds: int, sessions: int) -> dict[str, str]:
    """The long session and the account; the last 100 rounds and 50 sessions are saved one
    at a time, as commands save them, then single events up to the version before
    its next snapshot: the most events a load replays after a snapshot."""
    app = bootstrap(settings)
    try:
        app.open_account("open-long", "long", "EUR")
        app.deposit("deposit-long", "long", 2_000_000)
        sid = app.open_session("buy-in-long", "long", 1_000_000).session_id
        session: Any = app.repository.get(UUID(sid))

        def play(start: int, stop: int) -> None:
            for i in range(start, stop):
                code = f"LONG-{i:06d}"
                session.round_opened(code)
                session.stake(code, 100)
                if i % 2:
                    session.credit_win(code, 200)
                session.round_closed(code, None)

        bulk = max(0, rounds - 100)
        for start in [*range(0, bulk, 1_000), *range(bulk, rounds)]:
            stop = min(start + 1_000, bulk) if start < bulk else start + 1
            record, _ = as_request(f"rounds-{start}", partial(play, start, stop))
            app.save(session, record)
        every = settings.snapshot_every
        last = (newest_snapshot(app, session.id) // every + 1) * every - 1
        for n in range(last - session.version):
            # The worst case: up to the version before the next snapshot, one per save.
            move = session.stake if n % 2 == 0 else session.credit_win
            record, _ = as_request(f"tail-{n}", partial(move, "LONG-TAIL", 1))
            app.save(session, record)
        app.open_account("open-many", "many", "EUR")
        app.deposit("deposit-many", "many", 1_000_000)
        account: Any = app.repository.get(account_id_for("many"))

        def fund_and_return(count: int) -> list[GameSession]:
            opened = []
            for _ in range(count):
                s = GameSession(account.id, "many", "EUR", 1_000)
                account.fund_session(s.id, 1_000)
                account.return_session(s.id, s.close())
                opened.append(s)
            return opened

        bulk = max(0, sessions - 50)
        for start in [*range(0, bulk, 500), *range(bulk, sessions)]:
            count = min(500, bulk - start) if start < bulk else 1
            record, opened = as_request(f"sessions-{start}", partial(fund_and_return, count))
            app.save(account, *opened, record)
        last = (newest_snapshot(app, account.id) // every + 1) * every - 1
        for n in range(last - account.version):
            record, _ = as_request(f"deposit-tail-{n}", partial(account.deposit, 1))
            app.save(account, record)
        app.seal()
        return {
            "session": sid,
            "session_version": str(session.version),
            "session_after": str(session.version - newest_snapshot(app, session.id)),
            "account_version": str(account.version),
            "account_after": str(account.version - newest_snapshot(app, account.id)),
        }
    finally:
        app.close()


def newest_snapshot(app: Any, aggregate_id: UUID) -> int:
    if app.snapshots is None:
        return 0
    found = list(app.snapshots.get(aggregate_id, desc=True, limit=1))
    return int(found[0].originator_version) if found else 0


def as_request(name: str, action: Callable[[], T]) -> tuple[Request, T]:
    """Run ``action`` as one request: every movement it makes names the request record
    returned (to save with them), as a command's do, so the books verify."""
    rid, digest = request_aggregate_id("operator", name), body_digest(name, {})
    result = for_request(rid, digest, action)()
    record = Request(scope="operator", request_id=name, command=name, digest=digest, result={})
    return record, result


# -- one measurement, in its own process -------------------------------------------------


def child(args: dict[str, Any]) -> None:
    settings = Settings(
        data_dir=Path(args["data_dir"]),
        database_url=args["database_url"],
        snapshot_every=args["every"],
    )
    t0 = time.perf_counter()
    app = bootstrap(settings)
    opened = time.perf_counter() - t0
    before = rss_kib()
    t1 = time.perf_counter()
    tag = uuid4().hex[:8]
    if args["target"] == "session":
        app.red_dog_bet(f"bet-{tag}", args["session"], 100)
    else:
        app.deposit(f"dep-{tag}", "many", 1)
    elapsed = time.perf_counter() - t1
    grown = rss_kib() - before
    if args["target"] == "session" and app.open_round(args["session"]) is not None:
        app.red_dog_see(f"see-{tag}", args["session"])  # leave the session idle
    app.close()
    print(json.dumps({"ms": elapsed * 1e3, "open_ms": opened * 1e3, "rss_mib": grown / 1024}))


def measure(store: dict[str, Any], every: int, target: str) -> dict[str, float]:
    args = {**store, "every": every, "target": target}
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(args)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def verify_pass(db: str, public_keys: Any, with_snapshots: bool) -> tuple[float, int]:
    from audit_cli.rows import read_rows, read_snapshot_rows
    from audit_cli.verify import verify

    t = time.perf_counter()
    snapshots = read_snapshot_rows(db) if with_snapshots else None
    report = verify(read_rows(db), public_keys, jobs=1, snapshots=snapshots)
    elapsed = time.perf_counter() - t
    assert not report.findings, report.findings[:3]
    return elapsed, report.snapshots


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):8.1f}  (min {min(xs):.1f}, max {max(xs):.1f})"


def bench_store(kind: str, rounds: int, sessions: int, runs: int) -> None:
    data = Path(tempfile.mkdtemp(prefix="cold-"))
    schema = None
    url = None
    if kind == "postgres":
        schema = "bench_" + uuid.uuid4().hex[:10]
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        url = f"{PG}?schema={schema}"
    try:
        settings = Settings(data_dir=data, database_url=url)
        t = time.perf_counter()
        built = build(settings, rounds, sessions)
        print(
            f"\n[{kind}] built {rounds} rounds (session v{built['session_version']}, "
            f"{built['session_after']} events after its newest snapshot) and {sessions} "
            f"sessions of one account (v{built['account_version']}, "
            f"{built['account_after']} after) in {time.perf_counter() - t:.0f} s (load {load()})"
        )
        store = {"data_dir": str(data), "database_url": url, "session": built["session"]}
        figures: dict[tuple[str, int], list[float]] = {}
        opened: dict[int, list[float]] = {}
        for run in range(runs):
            for every in (100, 0) if run % 2 == 0 else (0, 100):
                for target in ("session", "account"):
                    r = measure(store, every, target)
                    figures.setdefault((target, every), []).append(r["ms"])
                    opened.setdefault(every, []).append(r["open_ms"])
                    label = "snapshots" if every else "replay   "
                    print(
                        f"  run {run + 1} {target:7s} {label} first command "
                        f"{r['ms']:9.1f} ms  (+{r['rss_mib']:.1f} MiB RSS; "
                        f"application opened in {r['open_ms']:.0f} ms; load {load()})"
                    )
        print(f"[{kind}] first command after a restart, {runs} runs each, ms:")
        for target in ("session", "account"):
            on, off = figures[(target, 100)], figures[(target, 0)]
            print(f"  {target:7s} with snapshots    {spread(on)}")
            print(f"  {target:7s} replaying events  {spread(off)}")
            ratio = statistics.median(off) / statistics.median(on)
            print(
                f"  {target:7s} replay / snapshot = {ratio:.0f}x  (goal: <= 50 ms with snapshots)"
            )
        keys = settings.keyring().public_keys
        db = url or str(data / "casino.sqlite")
        plain: list[float] = []
        checked: list[float] = []
        n = 0
        for _ in range(2):  # alternating, as the machine's load drifts
            plain.append(verify_pass(db, keys, with_snapshots=False)[0])
            elapsed, n = verify_pass(db, keys, with_snapshots=True)
            checked.append(elapsed)
        print(
            f"[{kind}] verify, one worker: {', '.join(f'{x:.1f}' for x in plain)} s without "
            f"the snapshot checks, {', '.join(f'{x:.1f}' for x in checked)} s with them "
            f"({n} snapshots checked): ratio {sum(checked) / sum(plain):.2f} (load {load()})"
        )
    finally:
        if schema is not None:
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(json.loads(argv[1]))
        return
    rounds = int(argv[0]) if argv else 20_000
    sessions = int(argv[1]) if len(argv) > 1 else 2_000
    runs = int(argv[2]) if len(argv) > 2 else 3
    stores = argv[3].split(",") if len(argv) > 3 else ["sqlite", "postgres"]
    print(f"cpus {os.cpu_count()}, load average {load()} at start")
    for kind in stores:
        bench_store(kind, rounds, sessions, runs)
    print(f"load average {load()} at end")


if __name__ == "__main__":
    main(sys.argv[1:])
