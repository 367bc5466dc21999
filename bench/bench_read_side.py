"""Benchmark: the read side's queries at growing logs, and the views' lag under load.

Part 1, queries (``--sizes``, default 10,000 and 100,000 events; SQLite and PostgreSQL):
one log is played once through ``Casino.command`` (50 players: 45 on transfer sessions,
5 on a seamless wallet, Red Dog rounds from 8 threads, group commit) and kept in
``--cache``; each size is a copy of its first N events into a fresh store (SQLite: a new
file; PostgreSQL: a fresh schema made by ``croupier db init``, rows COPYed in order, so
the signatures and chains are the played ones). On each copy the views are built from
the log (timed; with ``--played-views`` the largest size is instead the whole played
log, a few events over the size, with the views its play folded at commit), a late player
joins (account, deposit, session, 25 rounds), and these queries run the way the HTTP
routes run them, interleaved, ``--reps`` times, in ``--repeats`` rounds (the spread is
between rounds):

- ``statement_page``: a player's first page of 50 lines (``GET .../statement?limit=50``);
- ``late_page``: the late player's first page;
- ``balances``: a player's balances (``GET .../balances``);
- ``recon_page``: a page of 50 wallet transactions (``GET /v1/wallet/transactions``),
  from the start and (``recon_late``) from a cursor near the end.

Each figure is p50 and p99 in ms, and the ratio of the largest size's p99 to the
smallest's; beside them (``_cpu_``) the same of the query's CPU time (its thread's), which
leaves out the waits for a core that make most of a wall p99 on a loaded machine. The
baseline measured in the same run is the old read path (each query
folding the log from its first row: :class:`ledger.statement.StatementBook` over
``feed_opened``) for the first page and the balances, at every size (few repetitions).

Part 2, lag and CPU (``--load-seconds``, ``--repeats`` rounds): 50 threads play Red Dog as
fast as they can (the group-commit benchmark's load), each round once with the views
(folded at commit, the runner on, as ``croupier serve`` runs them) and once without
(neither), the order alternating, each on a fresh store of each kind. The lag of a commit
is the time from its commit until every view reflects it (p50, p99; watched every 5 ms);
the views' CPU is the time spent folding (in the commands' threads, at commit, and in the
runner's thread), set against the rest of the process's; and the process's CPU per
command with the views is set against that without them, round by round.

    python bench/bench_read_side.py [--sizes 10000,100000] [--stores sqlite,postgres]
        [--reps 200] [--repeats 3] [--load-seconds 10] [--cache /tmp/croupier-read-side]
        [--skip-queries] [--skip-lag] [--played-views]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sqlite3
import statistics
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import Run  # noqa: E402

from ledger import gc_policy  # noqa: E402
from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.casino import Casino  # noqa: E402
from ledger.checkpoints import feed_opened  # noqa: E402
from ledger.errors import LedgerError  # noqa: E402
from ledger.readside.runner import Runner  # noqa: E402
from ledger.readside.wallet import page  # noqa: E402
from ledger.seamless.commands import OpenSeamlessSession  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from ledger.statement import StatementBook, statements  # noqa: E402

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
OP = "op"
PLAYERS, SEAMLESS, THREADS = 50, 5, 8


# -- the played log ------------------------------------------------------------------------


def play_log(folder: Path, events: int) -> Path:
    """A SQLite store of at least ``events`` events played through the commands (kept)."""
    done = folder / f"played-{events}"
    if (done / "data" / "casino.sqlite").exists():
        return done
    from tests.wallet_fakes import wallet_over_http

    work = folder / f"playing-{events}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "wallet").mkdir(parents=True)
    started = time.perf_counter()
    with wallet_over_http(work / "wallet", read_timeout=5.0) as wallet:
        app = bootstrap(Settings(data_dir=work / "data"), wallets={OP: wallet.client})
        try:
            sessions = []
            for p in range(PLAYERS):
                player = f"p{p}"
                if p < SEAMLESS:
                    wallet.admin.set_player(player, "EUR", 10**12)
                    cmd = OpenSeamlessSession(OP, player, "EUR")
                    sessions.append(app.command(f"{player}-open", cmd).session_id)
                else:
                    app.open_account(f"{player}-open", player, "EUR")
                    app.deposit(f"{player}-dep", player, 10**12)
                    sessions.append(app.open_session(f"{player}-buy", player, 10**11).session_id)

            def play(first: int) -> None:
                # more players than threads: each thread takes turns over its sessions
                mine, n = sessions[first::THREADS], 0
                while int(app.recorder.max_notification_id() or 0) < events:
                    for sid in mine:
                        try:
                            r = app.red_dog_bet(f"{sid}-bet-{n}", sid, 100)
                            if r.status == "open":
                                app.red_dog_see(f"{sid}-see-{n}", sid)
                        except LedgerError as e:  # a seamless stake rolled back: play on
                            print(f"{sid} round {n}: {e.code}", flush=True)
                    n += 1

            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(play, range(THREADS)))
            app.seamless.outbox.drain()
        finally:
            app.close()
    took = time.perf_counter() - started
    print(f"played {events:,} events in {took:.0f} s", flush=True)
    work.rename(done)
    return done


# -- copies of a prefix ----------------------------------------------------------------------


def sqlite_copy(played: Path, events: int, into: Path, keep_views: bool = False) -> Settings:
    """The first ``events`` events of the played log in a new SQLite store (its snapshots
    and views left out: the views are built from the copy); ``keep_views``: the whole
    log with the views its play folded at commit."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copytree(played / "data" / "keys", into / "keys")
    source = sqlite3.connect(played / "data" / "casino.sqlite")
    target = sqlite3.connect(into / "casino.sqlite")
    source.backup(target)
    source.close()
    names = [r[0] for r in target.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    triggers = target.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall()
    for (trigger,) in triggers:
        target.execute(f"DROP TRIGGER {trigger}")  # the store puts them back when it opens
    target.execute("DELETE FROM stored_snapshots")
    if not keep_views:
        target.execute("DELETE FROM stored_events WHERE rowid > ?", (events,))
        for name in names:
            if "_view_" in name or name == "tracking":
                target.execute(f"DROP TABLE {name}")
    target.commit()
    target.execute("VACUUM")
    target.close()
    return Settings(data_dir=into)


def postgres_copy(
    played: Path, events: int, into: Path, keep_views: bool = False
) -> tuple[Settings, str]:
    """As :func:`sqlite_copy`, into a fresh PostgreSQL schema (rows COPYed in order)."""
    import psycopg

    from api.dbinit import init_db

    schema = "b_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{PG}?schema={schema}"
    role = psycopg.conninfo.conninfo_to_dict(PG).get("user") or "postgres"
    init_db(url, str(role))
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copytree(played / "data" / "keys", into / "keys")
    source = sqlite3.connect(played / "data" / "casino.sqlite")
    rows = source.execute(
        "SELECT originator_id, originator_version, topic, state FROM stored_events "
        "WHERE rowid <= ? ORDER BY rowid",
        (2**62 if keep_views else events,),  # the views reflect the whole log
    )
    with psycopg.connect(PG) as conn, conn.cursor() as cur:
        with cur.copy(
            f"COPY {schema}.casino_events (originator_id, originator_version, topic, state) "
            "FROM STDIN"
        ) as copy:
            for oid, version, topic, state in rows:
                copy.write_row((str(uuid.UUID(oid)), version, topic, state))
        if keep_views:
            copy_views(source, cur, schema)
        conn.commit()
    source.close()
    return Settings(data_dir=into, database_url=url), schema


def copy_views(source: sqlite3.Connection, cur: Any, schema: str) -> None:
    """The played log's views and tracking rows, from its SQLite store into ``schema``
    (made by ``croupier db init``: the same tables, named for PostgreSQL)."""
    from ledger.readside import projectors

    for projector in projectors():
        for table in projector.tables:
            names = ", ".join(table.names)
            rows = source.execute(f"SELECT {names} FROM stored_view_{projector.name}_{table.name}")
            target = f"{schema}.casino_view_{projector.name}_{table.name}"
            with cur.copy(f"COPY {target} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        (position,) = source.execute(
            "SELECT notification_id FROM tracking WHERE application_name = ?",
            (f"stored:{projector.name}",),
        ).fetchone()
        cur.execute(
            f"INSERT INTO {schema}.casino_tracking (application_name, notification_id) "
            "VALUES (%s, %s) ON CONFLICT (application_name) "
            "DO UPDATE SET notification_id = excluded.notification_id",
            (f"casino:{projector.name}", position),
        )


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


# -- the queries -----------------------------------------------------------------------------


def statement_page(app: Casino, player: str) -> int:
    return len(statements(app).page(player, 0, 51)[1])  # as GET .../statement does


def balances(app: Casino, player: str) -> int:
    return len(statements(app).ledgers(player)[1])  # as GET .../balances does


def old_page(app: Casino, player: str) -> int:
    book = StatementBook(player, 0, 51)
    feed_opened(app, 0, book.feed_payload, wants=book.wants)
    return len(book.lines(player))


def old_balances(app: Casino, player: str) -> int:
    book = StatementBook(player, 2**62)
    feed_opened(app, 0, book.feed_payload, wants=book.wants)
    return len(book.balances(player))


def late_player(app: Casino) -> str:
    player = "late"
    app.open_account("late-open", player, "EUR")
    app.deposit("late-dep", player, 1_000_000)
    sid = app.open_session("late-buy", player, 500_000).session_id
    for n in range(25):
        r = app.red_dog_bet(f"late-bet-{n}", sid, 100)
        if r.status == "open":
            app.red_dog_see(f"late-see-{n}", sid)
    return player


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(
    queries: dict[str, Callable[[], object]], reps: int, cpu: dict[str, list[float]] | None = None
) -> dict[str, list[float]]:
    """Each query's wall times (ms), ``reps`` each, interleaved; and, into ``cpu``, the
    CPU time of the query's thread (ms): on a loaded machine a wall p99 is mostly the
    time the thread waited for a core, which its CPU time leaves out."""
    times: dict[str, list[float]] = {name: [] for name in queries}
    names = list(queries)
    for _ in range(reps):
        random.shuffle(names)
        for name in names:
            c, t = time.thread_time(), time.perf_counter()
            queries[name]()
            times[name].append((time.perf_counter() - t) * 1000)
            if cpu is not None:
                cpu.setdefault(name, []).append((time.thread_time() - c) * 1000)
    return times


def settle_and_explain(app: Casino, late: str, late_cursor: int) -> None:
    """PostgreSQL: the views' tables vacuumed and analysed (what autovacuum does to a
    running server's tables; measured before it, the queries ran beside the autovacuum
    of the rows just built), then each query's plan printed (EXPLAIN ANALYZE)."""
    import psycopg

    readside = app.readside
    tables = [name for p in readside.projections.values() for name in p.view.table_names.values()]
    lines = readside["statement"].view.table_names
    book = readside["wallet"].view.table_names["transactions"]
    explained = {
        "statement_page": f"SELECT * FROM {lines['lines']} WHERE player = 'p20' AND seq > 0 "
        "ORDER BY seq LIMIT 51",
        "late_page": f"SELECT * FROM {lines['lines']} WHERE player = '{late}' AND seq > 0 "
        "ORDER BY seq LIMIT 51",
        "balances": f"SELECT * FROM {lines['ledgers']} WHERE player = 'p20' ORDER BY owned, ord",
        "recon_page": f"SELECT * FROM {book} WHERE ord > 0 AND operator = '{OP}' "
        "ORDER BY ord LIMIT 51",
        "recon_late": f"SELECT * FROM {book} WHERE ord > {late_cursor} AND operator = '{OP}' "
        "ORDER BY ord LIMIT 51",
        "readded": f"SELECT * FROM {book} WHERE readded = 1 AND seq > 0",
    }
    with psycopg.connect(PG, autocommit=True) as conn:
        for table in tables:
            conn.execute(f"VACUUM (ANALYZE) {table}")
        for name, text in explained.items():
            plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {text}").fetchall()
            print(name, *(row[0] for row in plan), sep="\n  ", flush=True)


def size_figures(settings: Settings, reps: int, repeats: int, old: bool = True) -> dict[str, Any]:
    app = bootstrap(settings)
    try:
        events = int(app.recorder.max_notification_id() or 0)
        t = time.perf_counter()
        app.readside.catch_up()  # nothing to do on views kept from the play
        build_s = time.perf_counter() - t
        late = late_player(app)
        app.readside.catch_up()
        recon = page(app, limit=10**9)[0]
        late_cursor = recon[-60].seq if len(recon) > 60 else 0
        if settings.database_url:
            settle_and_explain(app, late, late_cursor)
        queries: dict[str, Callable[[], object]] = {
            "statement_page": lambda: statement_page(app, "p20"),
            "late_page": lambda: statement_page(app, late),
            "balances": lambda: balances(app, "p20"),
            "recon_page": lambda: page(app, OP, limit=51),
            "recon_late": lambda: page(app, OP, after=late_cursor, limit=51),
        }
        cpus: list[dict[str, list[float]]] = [{} for _ in range(repeats)]
        rounds = [measure(queries, reps, cpus[r]) for r in range(repeats)]
        out: dict[str, Any] = {"events": events, "views_built_s": round(build_s, 1)}
        for name in queries:
            p50s = [statistics.median(r[name]) for r in rounds]
            p99s = [percentile(r[name], 0.99) for r in rounds]
            out[f"{name}_p50_ms"] = round(statistics.median(p50s), 3)
            out[f"{name}_p99_ms"] = round(statistics.median(p99s), 3)
            out[f"{name}_p99_spread_ms"] = [round(min(p99s), 3), round(max(p99s), 3)]
            cpu_p50s = [statistics.median(r[name]) for r in cpus]
            cpu_p99s = [percentile(r[name], 0.99) for r in cpus]
            out[f"{name}_cpu_p50_ms"] = round(statistics.median(cpu_p50s), 3)
            out[f"{name}_cpu_p99_ms"] = round(statistics.median(cpu_p99s), 3)
        if not old:
            return out
        folded = measure(
            {
                "old_page": lambda: old_page(app, "p20"),
                "old_balances": lambda: old_balances(app, "p20"),
            },
            3,
        )
        for name, values in folded.items():
            out[f"{name}_ms"] = round(statistics.median(values), 1)
        return out
    finally:
        app.close()


# -- lag under load ---------------------------------------------------------------------------


def lag_under_load(
    settings: Settings, seconds: float, views: bool, gc_tuned: bool = True
) -> dict[str, Any]:
    """50 threads of Red Dog for ``seconds`` on a fresh store; ``views``: the views
    folded at commit and the runner on (as ``croupier serve`` runs them), else neither
    (the views left behind: the commands' cost alone). ``gc_tuned``: the collector as
    ``croupier serve`` tunes it once started (:mod:`ledger.gc_policy`), else the
    interpreter's defaults."""
    app = bootstrap(settings)
    defaults = gc.get_threshold()
    if gc_tuned:
        gc_policy.tune()
    fold = app.readside.commits
    assert fold is not None
    runner = Runner(app.readside, settings.readside_poll_seconds)
    commits: deque[tuple[int, float]] = deque()
    lags: list[float] = []
    lock = threading.Lock()
    views_cpu = [0.0]  # the fold at commit, in the commands' threads, and the runner's
    spent: list[list[float]] = []  # each thread's own sum (no lock taken inside the timer)
    real_catch_up = app.readside.catch_up
    inside = threading.local()

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        """``method`` with its thread's CPU added to the views' (once when one calls
        another: ``before_insert`` ends a previous attempt with ``ended``). Each thread
        adds to its own sum: a lock shared by 50 threads, taken inside the timed span,
        counted its waits' CPU as the views'."""

        def call(*args: Any, **kwargs: Any) -> Any:
            if getattr(inside, "on", False):
                return method(*args, **kwargs)
            inside.on = True
            t = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                took = time.thread_time() - t
                inside.on = False
                mine = getattr(inside, "sum", None)
                if mine is None:
                    mine = inside.sum = [0.0]
                    with lock:
                        spent.append(mine)
                mine[0] += took

        return call

    app.readside.catch_up = timed(real_catch_up)  # type: ignore[method-assign]
    # Every step of the fold at commit: the tracking rows read before the insert, the
    # fold and its writes after it, the rows kept once the transaction has ended.
    fold.before_insert = timed(fold.before_insert)  # type: ignore[method-assign]
    fold.inserted = timed(fold.inserted)  # type: ignore[method-assign]
    fold.ended = timed(fold.ended)  # type: ignore[method-assign]

    def committed(position: int) -> None:
        with lock:
            commits.append((position, time.perf_counter()))

    sessions = []
    for p in range(50):
        app.open_account(f"l{p}-open", f"l{p}", "EUR")
        app.deposit(f"l{p}-dep", f"l{p}", 10**12)
        sessions.append(str(app.open_session(f"l{p}-buy", f"l{p}", 10**11).session_id))
    real_catch_up()
    fold.enabled = views
    for mine in spent:
        mine[0] = 0.0
    if views:
        app.commit_observers.append(committed)
        runner.start()
    stop = threading.Event()
    done = [0]

    def play(sid: str) -> None:
        n = count = 0
        while not stop.is_set():
            r = app.red_dog_bet(f"{sid}-b{n}", sid, 100)
            count += 1
            if r.status == "open":
                app.red_dog_see(f"{sid}-s{n}", sid)
                count += 1
            n += 1
        with lock:
            done[0] += count

    watcher_cpu = [0.0]

    def watch() -> None:
        """Every 5 ms, the views' positions (one query) and the commits they reflect.
        It runs in the run without the views too (nothing to reflect there), so both
        runs carry its queries' load: the CPU with the views over without is then the
        views' alone."""
        projections = list(app.readside.projections.values())
        view = projections[0].view
        names = [p.view.tracking_name for p in projections]
        t = time.thread_time()
        while not stop.is_set() or commits:
            reached = min(view.positions(names)[1].values())
            now = time.perf_counter()
            with lock:
                while commits and commits[0][0] <= reached:
                    lags.append((now - commits.popleft()[1]) * 1000)
            if stop.is_set() and not commits:
                break
            time.sleep(0.005)
        watcher_cpu[0] = time.thread_time() - t

    watcher = threading.Thread(target=watch)
    watcher.start()
    cpu0, t0 = time.process_time(), time.perf_counter()
    threads = [threading.Thread(target=play, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    watcher.join(timeout=60)
    if views:
        runner.stop()
    folded = fold.folded
    views_cpu[0] = sum(mine[0] for mine in spent)
    app.close()
    gc.unfreeze()  # the next run starts from the interpreter's collector again
    gc.set_threshold(*defaults)
    commands = done[0]
    out: dict[str, Any] = {
        "commands": commands,
        "commands_per_s": round(commands / wall, 1),
        # the process's CPU but the lag watcher's (the benchmark's own thread)
        "cpu_ms_per_command": round((cpu - watcher_cpu[0]) * 1000 / commands, 3),
    }
    if views:
        if not lags:
            raise RuntimeError("no commit was seen reflected by the views")
        command_cpu = cpu - watcher_cpu[0] - views_cpu[0]
        out.update(
            lag_p50_ms=round(percentile(lags, 0.5), 1),
            lag_p99_ms=round(percentile(lags, 0.99), 1),
            lag_max_ms=round(max(lags), 1),
            views_cpu_ms_per_command=round(views_cpu[0] * 1000 / commands, 3),
            command_cpu_ms_per_command=round(command_cpu * 1000 / commands, 3),
            views_cpu_share=round(views_cpu[0] / command_cpu, 3),
            folded_commits=folded,
        )
    return out


def fresh(kind: str, folder: Path) -> tuple[Settings, str | None]:
    shutil.rmtree(folder, ignore_errors=True)
    if kind == "sqlite":
        return Settings(data_dir=folder), None
    import psycopg

    schema = "b_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return Settings(data_dir=folder, database_url=f"{PG}?schema={schema}"), schema


def spread(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def lag_runs(kind: str, cache: Path, seconds: float, repeats: int, gc_tuned: bool) -> None:
    """``repeats`` rounds, each with and without the views (the order alternating), each
    on a fresh store; the views' CPU share measured two ways: the time spent folding
    (in the commands' threads and the runner's) over the rest, and the difference of the
    process's CPU per command with and without them."""
    collector = "serve's gc" if gc_tuned else "default gc"
    run = Run("bench_read_side", f"lag {kind} 50 threads {seconds:g}s x{repeats}, {collector}")
    rounds: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for r in range(repeats):
        for views in (True, False) if r % 2 == 0 else (False, True):
            settings, schema = fresh(kind, cache / f"lag-{kind}")
            try:
                found = lag_under_load(settings, seconds, views, gc_tuned)
            finally:
                if schema:
                    drop_schema(schema)
            print(kind, "views" if views else "no views", found, flush=True)
            rounds[views].append(found)
    with_views, without = rounds[True], rounds[False]
    figures: dict[str, Any] = {"rounds": repeats}
    for name in (
        "commands_per_s",
        "lag_p50_ms",
        "lag_p99_ms",
        "lag_max_ms",
        "views_cpu_ms_per_command",
        "command_cpu_ms_per_command",
        "views_cpu_share",
        "cpu_ms_per_command",
    ):
        figures[name] = spread([f[name] for f in with_views])
    baseline = {
        "commands_per_s": spread([f["commands_per_s"] for f in without]),
        "cpu_ms_per_command": spread([f["cpu_ms_per_command"] for f in without]),
    }
    pairs = [
        w["cpu_ms_per_command"] / n["cpu_ms_per_command"] - 1
        for w, n in zip(with_views, without, strict=True)
    ]
    figures["cpu_per_command_with_vs_without"] = spread(pairs)
    run.done(figures, baseline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--load-seconds", type=float, default=10.0)
    parser.add_argument("--cache", default="/tmp/croupier-read-side")
    parser.add_argument("--skip-queries", action="store_true")
    parser.add_argument("--skip-lag", action="store_true")
    parser.add_argument(
        "--old-up-to",
        type=int,
        help="the old path (folding the log from its first row) measured only at sizes up "
        "to this (at 10^6 events its balances take 70 to 85 s a call)",
    )
    parser.add_argument(
        "--gc-default",
        action="store_true",
        help="the lag runs with the interpreter's collector, not croupier serve's",
    )
    parser.add_argument(
        "--played-views",
        action="store_true",
        help="the largest size is the whole played log with the views its play folded at "
        "commit (not rebuilt: at 10^6 events a rebuild took 8 min on SQLite, 27 on PostgreSQL)",
    )
    args = parser.parse_args()
    cache = Path(args.cache)
    sizes = [int(s) for s in args.sizes.split(",")]
    stores = args.stores.split(",")
    if not args.skip_queries:
        played = play_log(cache, max(sizes))
        for kind in stores:
            run = Run("bench_read_side", f"queries {kind} sizes={args.sizes}")
            per_size: dict[int, dict[str, Any]] = {}
            for size in sizes:
                where = cache / f"{kind}-{size}"
                schema = None
                # the whole played log, with the views its play folded at commit
                keep = args.played_views and size == max(sizes)
                if kind == "sqlite":
                    settings = sqlite_copy(played, size, where, keep)
                else:
                    settings, schema = postgres_copy(played, size, where, keep)
                try:
                    old = args.old_up_to is None or size <= args.old_up_to
                    per_size[size] = size_figures(settings, args.reps, args.repeats, old)
                finally:
                    if schema:
                        drop_schema(schema)
                if keep:
                    per_size[size]["views_from_play"] = True
                    del per_size[size]["views_built_s"]
                print(kind, size, per_size[size], flush=True)
            small, large = per_size[sizes[0]], per_size[sizes[-1]]
            figures: dict[str, Any] = {}
            for size, found in per_size.items():
                for k, v in found.items():
                    if not k.startswith("old_"):
                        figures[f"{size}:{k}"] = v
            for name in ("statement_page", "late_page", "balances", "recon_page", "recon_late"):
                ratio = large[f"{name}_p99_ms"] / small[f"{name}_p99_ms"]
                figures[f"{name}_p99_ratio_{sizes[-1]}_vs_{sizes[0]}"] = round(ratio, 2)
                cpu_ratio = large[f"{name}_cpu_p99_ms"] / small[f"{name}_cpu_p99_ms"]
                figures[f"{name}_cpu_p99_ratio_{sizes[-1]}_vs_{sizes[0]}"] = round(cpu_ratio, 2)
            baseline = {
                f"{size}:{k}": v
                for size, f in per_size.items()
                for k, v in f.items()
                if "old_" in k
            }
            run.done(figures, baseline)
    for kind in stores:
        if not args.skip_lag:
            lag_runs(kind, cache, args.load_seconds, args.repeats, not args.gc_default)


if __name__ == "__main__":
    main()
