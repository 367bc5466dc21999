"""Benchmark: M players at one live Infinite Blackjack table over HTTP, on PostgreSQL:
each player on its own WebSocket (``--mode ws``: messages and commands on one
connection, issue 28) or with its own Server-Sent Events stream and REST commands
(``--mode sse``, issue 10); both by default, one after the other in the same run (the
SSE + REST figures are the baseline the WebSocket's are compared with).

``croupier serve`` runs in its own process on a fresh PostgreSQL schema; this process is
the load generator (httpx async, one client and one stream per player), or, with
``--procs K``, K processes of its own, each with every K-th player: a thousand httpx
clients in one event loop are late to read their answers and messages when a step's
burst arrives (``client_lag_p99_ms``, below), and the latencies measured are then the
load generator's, not the server's. Per M it plays
``--rounds`` rounds: at each ``round-opened`` every player places a main bet; at each
``options`` message it decides at once (hit below 12, else stand; no insurance), so
every step closes as soon as all have decided; with ``--spread``, each decision waits a
random time in the first half of its window first (the load issue 28 describes;
without it every player's decision arrives in the same instant, and the p99 is the
time to drain that burst). With ``--side-bet`` each player adds a 21+3 side bet to its
main bet (the issue's load; without it, a main bet only, as the earlier records). A
command waits for its answer a minute past the betting window (at 10,000 players the
bets queue for longer than a minute). Measured:

- bets accepted per second in the betting window (first bet sent to last answered);
- fan-out latency: for every ``bets-closed`` and ``step-closed`` message, the time from
  the server's close (its ``at``, the same machine's clock) to each client having it:
  p50 and p99 over all (client, message) pairs, and the p99 of the per-message maximum
  (the last client to get it);
- decision round trip: POST decide to its answer, p50/p99;
- the settlement (``settle_max_s``): the dealer's last card (the server's time in
  ``dealer-played``) to the first client having ``round-settled`` (the longest of the
  rounds; an upper bound: it includes that client's fan-out latency);
- events lost: after the run, the log is read in this process with the stream's own
  fold (``api.table_messages``), from before the first round to the end; each client's
  list of message ids must equal what the log says it should have got (its seat's and
  the table's): the difference is counted, also the streams that were dropped.

Goal (issue 10): 1,000 players on this 2-core machine, fan-out p99 <= 500 ms, decision
p99 <= 200 ms, nothing lost. The machine also runs PostgreSQL and other work: repeat and
give the spread with the load average (printed).

    PYTHONPATH=. python bench/bench_table_http.py --players 100 500 1000 [--runs 2] [--rounds 2]
        [--mode ws sse] [--spread] [--side-bet] [--procs K] [--workers N] [--profile DIR]
        [--server-tree PATH] [--tables-process] [--label TEXT]

One JSON line per run and mode (bench/record.py: bench/results/bench_table_http.jsonl),
with ``players``, ``bets_refused``, ``decision_p99_ms``, ``fanout_p99_ms`` and ``lost``;
``bets_refused_early`` and ``decisions_refused_early``: those refused that were sent more
than 1 s before their window's deadline (issue 28's goal is none: the table opens its
first round when the bench creates it, before the players' sessions are set up, so when
the set-up and the connections take less than the betting window the players bet into a
window that closes while they bet, and the bets after its close are refused rightly;
``first_window_left_s`` says which: how much of the first round's window was left when
the play started, <= 0 when it had closed with no bet and the first bet opened a new one;
since 2026-12-04 12:40 UTC the play waits for that window to close, so the first bet
always opens a full window and every run starts alike);
and the CPU the play cost (from the players' start to the last round settled):
``server_cpu_s`` (every process of ``croupier serve``, its workers too, every thread, from
/proc) and ``pg_cpu_s`` (the PostgreSQL backends of the bench's own database: give
``CROUPIER_TEST_POSTGRES_URL`` a database of the bench's own, as other work on the
cluster would be counted in ``test``),
and both per seat per round (``*_ms_per_seat_round``: CPU / (players x rounds)) and per
command answered (``*_ms_per_command``: CPU / (bets accepted + decisions answered), the
deals and settlements included: a random shoe moves the decisions a seat makes from one
run to the next, and with them the CPU a seat, so compare two trees by this one); the
load generator's own: ``client_cpu_s`` (every process of it), ``client_cpu_share`` (its
busiest process's CPU over the play's wall time, an average over the play, idle windows
included) and ``client_lag_p50_ms`` / ``client_lag_p99_ms`` (how late each process's
event loop wakes from a 50 ms sleep, all the play: a late loop reads every answer late).

``--profile DIR`` (with one load generator process: it follows the phases) samples the
server with py-spy (``record --format raw --gil``, 200 Hz,
non-blocking: only the thread holding the GIL, so a thread waiting for PostgreSQL or a
lock counts nothing) in three phases of the first round, one folded-stack file each
(``bench/table_budget.py`` turns it into the per-command budget of
docs/performance/table-command-budget.md); ``--server-tree PATH`` runs another
checkout's server (say, the commit before a change) under this load generator;
``--shoe-seed HEX`` starts it through ``bench/fixed_shoe_serve.py``, which draws every
seed as HEX: each run deals the same shoe (a random shoe deals one run 10,000 decisions
and the next 30,000, or an insurance round the dealer's blackjack ends), so the runs of
two trees compare. The record keeps the seed (``shoe_seed``). ``--tables-process`` runs
the table's runner in a second ``croupier serve`` on the same database
(``CROUPIER_ROLE=tables``, started first) and the players' server as a front
(``CROUPIER_ROLE=front``); ``server_cpu_s`` then counts both, and the record says
``tables_process``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record import Run  # noqa: E402
from tests.integration.test_http_serve import launch  # noqa: E402
from tests.table_client import Received, SocketClient, TableClient  # noqa: E402

Client = TableClient | SocketClient

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TABLE = "bench"
CONNECTING = 200
INSURANCE_MS = 10_000
STEP_MS = 20_000


SIDE_BET = "21+3"
"""The side bet a player adds with ``--side-bet`` (its table minimum, as the main bet)."""


@dataclass(frozen=True)
class Load:
    """What every player does: ``rounds`` rounds over ``mode`` (``ws`` or ``sse``), a
    main bet at each round's opening (and a :data:`SIDE_BET` with ``side_bet``: the
    issue's load), each decision at once or, with ``spread``, at a random time in the
    first half of its window; a command waits ``answer_s`` for its answer (longer than
    the betting window: at 10,000 players the bets queue for more than a minute)."""

    rounds: int
    mode: str
    spread: bool = False
    side_bet: bool = False
    answer_s: float = 60.0


def betting_ms(m: int) -> int:
    """The betting window the bench's table gets for ``m`` players."""
    return max(5_000, 12 * m)


EARLY_S = 1.0
"""A command sent more than this before its window's deadline must not be refused."""
FIRST_WINDOW_MARGIN_S = 2.0
"""The play starts this long after the first round's betting window would close: the
runner has closed it (its tick and grace) and the round waits for a first bet."""


def early(sent: float, deadline: str | None) -> bool:
    """Whether a command sent at ``sent`` (epoch seconds) was sent more than
    :data:`EARLY_S` before ``deadline`` (a window with no deadline: always)."""
    if deadline is None:
        return True
    return sent < _ts(deadline) - EARLY_S


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds of every live process in the process group ``pgid`` (``croupier
    serve``'s supervisor and its ``--workers``: the server is started in a session of
    its own)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system, every thread) of a live process; 0 if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Meter:
    """The CPU of the server and of its database's backends over the measured span
    (:meth:`start` to :meth:`stop`), and, with a profile path, py-spy's folded stacks of
    three phases of the first round: ``bets`` (the players' start to the last bet
    answered), ``decisions`` (the first ``bets-closed`` received to the first
    ``dealer-played``) and ``settlement`` (from there to the first ``round-settled``),
    each with the server's CPU and the commands answered in it."""

    def __init__(
        self, server: int, db: str, profile: Path | None, tables: int | None = None
    ) -> None:
        self.server, self.db, self.profile = server, db, profile
        self.tables = tables
        """The tables process's pid (``--tables-process``): its CPU is the server's too."""
        self.spy: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        """Every client sees the phase's last message: one of them ends it."""
        self.phase: str | None = None
        self.phase_cpu = 0.0
        self.phases: dict[str, float] = {}
        self.cpu0 = 0.0
        self.pg0: dict[int, float] = {}
        self.started = 0.0
        """When the play started (epoch seconds; :meth:`start`)."""

    def backends(self) -> dict[int, float]:
        with psycopg.connect(self.db.split("?")[0], autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        return {pid: cpu_of(pid) for (pid,) in rows}

    def server_cpu(self) -> float:
        """Every process of the server: its workers', and the tables process's if any."""
        tables = 0.0 if self.tables is None else group_cpu(self.tables)
        return group_cpu(self.server) + tables

    def start(self) -> None:
        self.begin("bets")
        time.sleep(1)  # py-spy attached before the first bet
        self.cpu0 = self.server_cpu()
        self.pg0 = self.backends()
        self.started = time.time()

    def begin(self, phase: str) -> None:
        """Profile ``phase`` (once; nothing without a profile path)."""
        with self.lock:
            if self.profile is None or phase in self.phases or self.phase is not None:
                return
            self._begin(phase)

    def _begin(self, phase: str) -> None:
        assert self.profile is not None
        self.profile.parent.mkdir(parents=True, exist_ok=True)
        out = self.profile.with_name(f"{self.profile.stem}-{phase}.txt")
        spy = Path(sys.executable).parent / "py-spy"
        cmd = [str(spy) if spy.exists() else "py-spy", "record", "--pid", str(self.server)]
        cmd += ["--format", "raw", "--rate", "200", "--gil", "--nonblocking", "-o", str(out)]
        self.spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.phase, self.phase_cpu = phase, cpu_of(self.server)

    def end(self, phase: str) -> None:
        """Stop profiling ``phase`` if it is the one running (py-spy writes its file on
        SIGINT; waited for here, so call it from a thread, not the event loop)."""
        with self.lock:
            if self.phase != phase or self.spy is None:
                return
            self._end(phase)

    def _end(self, phase: str) -> None:
        assert self.spy is not None
        self.phases[phase] = cpu_of(self.server) - self.phase_cpu
        self.spy.send_signal(signal.SIGINT)
        self._wait()
        self.phase = None

    def _wait(self) -> None:
        assert self.spy is not None
        spy, self.spy = self.spy, None
        _, err = spy.communicate(timeout=120)
        if spy.returncode:
            print(f"py-spy: {err.decode()[-2000:]}", file=sys.stderr)

    def stop(self) -> dict[str, float]:
        server = self.server_cpu() - self.cpu0
        pg = sum(cpu - self.pg0.get(pid, 0.0) for pid, cpu in self.backends().items())
        if self.phase is not None:
            self.end(self.phase)
        out = {"server_cpu_s": server, "pg_cpu_s": pg}
        for phase, cpu in self.phases.items():
            out[f"profile_{phase}_cpu_s"] = cpu
        return out


async def setup(base: str, op_headers: dict[str, str], m: int) -> list[tuple[str, str]]:
    sem = asyncio.Semaphore(40)
    async with httpx.AsyncClient(base_url=base, headers=op_headers, timeout=120) as op:

        async def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
            key = uuid.uuid4().hex  # a retry after a dropped connection is the same request
            for attempt in range(5):
                try:
                    r = await op.post(url, json=body, headers={"Idempotency-Key": key})
                    break
                except httpx.TransportError:
                    if attempt == 4:
                        raise
                    await asyncio.sleep(1)
            assert r.status_code in (200, 201), (url, r.text)
            out: dict[str, Any] = r.json()
            return out

        async def one(i: int) -> tuple[str, str]:
            async with sem:
                p = f"b{i:04d}"
                await post("/v1/accounts", {"player_id": p, "currency": "EUR"})
                await post(f"/v1/accounts/{p}/deposits", {"amount": 1_000_000})
                s = await post("/v1/sessions", {"player_id": p, "buy_in": 100_000})
                return s["session_id"], s["token"]

        return list(await asyncio.gather(*(one(i) for i in range(m))))


class Bench:
    def __init__(self, load: Load, meter: Meter | None = None) -> None:
        self.load = load
        self.rounds = load.rounds
        self.meter = meter
        self.first: str | None = None
        """The first round's code (the profiled one)."""
        self.answered: dict[str, int] = {}
        """Bets and decisions answered in each profiled phase."""
        self.bet_times: dict[str, list[tuple[float, float]]] = {}
        """Per round code: (sent, answered) of every bet."""
        self.bets_ok = 0
        self.bets_refused_early = 0
        """Bets refused that were sent more than :data:`EARLY_S` before their window's
        deadline (the issue's goal: none); one sent later and answered after the close
        counts in ``bets_refused`` only."""
        self.decisions_refused_early = 0
        """The same for decisions and their step's (or insurance's) deadline."""
        self.bets_refused = 0
        self.decisions: list[float] = []
        self.decisions_refused = 0
        self.refusals: dict[str, int] = {}
        """Refused bets and decisions by error code."""
        self.unanswered = 0
        """Commands with no answer within the load's ``answer_s`` (or whose socket went
        twice): counted, and the player plays on, so the run still ends in a record."""
        self.stalled = 0
        """Players that got no message for minutes and stopped waiting (counted)."""
        self.players = 0
        self.connect_failed = 0
        """Players whose socket or stream never opened (the round is played without them)."""
        self.connecting = asyncio.Semaphore(CONNECTING)
        """Players connect a few hundred at a time: 10,000 handshakes at once did not
        finish within the client's 60 s open timeout (2026-12-03, load 8-10)."""

    async def player(self, c: Client, start: asyncio.Event) -> None:
        async with self.connecting:
            c.open()
            deadline = time.monotonic() + 600
            while not c.connected.is_set():
                task = getattr(c, "_task", None)
                if (task is not None and task.done()) or time.monotonic() > deadline:
                    self.connect_failed += 1  # counted, and the others play on
                    return
                await asyncio.sleep(0.2)
        await start.wait()
        played: set[str] = set()
        while True:
            try:
                e = await c.next(timeout=max(300.0, 2 * self.load.answer_s))
            except TimeoutError:  # the server sent this player nothing for minutes
                self.stalled += 1
                return
            code = e.data.get("code")
            opened = e.type in ("round-opened", "betting-waiting", "betting-extended")
            if opened and code not in played and len(played) < self.rounds:
                played.add(code)
                await self.bet(c, code, e.data.get("deadline"))
            elif e.type == "options" and e.data["options"]:
                await self.decide(c, e)
            elif e.type == "round-settled" and len(played) >= self.rounds and code in played:
                return  # before the meter's branch, which takes every message of the first
            elif self.meter is not None and code is not None and code == self.first:
                if e.type == "bets-closed":
                    self.meter.begin("decisions")
                elif e.type == "dealer-played":
                    await asyncio.to_thread(self.meter.end, "decisions")
                    self.meter.begin("settlement")
                elif e.type == "round-settled":
                    await asyncio.to_thread(self.meter.end, "settlement")

    async def bet(self, c: Client, code: str, deadline: str | None = None) -> None:
        """A main bet (and a side bet) on the round ``code``, whose window closes at
        ``deadline`` (None: the round waits for its first bet, which opens a full window)."""
        t = time.time()
        if self.first is None:
            self.first = code
        sent = t
        r = await self._post(c, "bets", {"bet": "main", "amount": 100})
        if self.load.side_bet and r is not None and r.status_code == 200:
            self._count_bet(r, sent, deadline)
            sent = time.time()
            r = await self._post(c, "bets", {"bet": SIDE_BET, "amount": 100})
        self.bet_times.setdefault(code, []).append((t, time.time()))
        self._phase_count("bets")
        last = code == self.first and len(self.bet_times[code]) == self.players
        if self.meter is not None and last:
            await asyncio.to_thread(self.meter.end, "bets")
        if r is not None:
            self._count_bet(r, sent, deadline)

    async def _post(self, c: Client, action: str, body: dict[str, Any]) -> Any:
        """The command's answer, or None (counted in ``unanswered``) if none came."""
        try:
            return await c.post(action, body)
        except (TimeoutError, ConnectionError):
            self.unanswered += 1
            return None

    def _count_bet(self, r: Any, sent: float, deadline: str | None) -> None:
        if r.status_code == 200:
            self.bets_ok += 1
        else:
            self.bets_refused += 1
            if early(sent, deadline):
                self.bets_refused_early += 1
            code = str(r.json().get("code"))
            self.refusals[code] = self.refusals.get(code, 0) + 1

    async def decide(self, c: Client, e: Received) -> None:
        offered = [o["decision"] for o in e.data["options"]]
        if self.load.spread:  # the load: spread over the first half of the window
            half = (INSURANCE_MS if "no-insurance" in offered else STEP_MS) / 2000
            await asyncio.sleep(random.uniform(0, half))
        if "no-insurance" in offered:
            t = time.time()
            r = await self._post(c, "insurance", {"take": False})
        else:
            hand = e.data["hands"][e.data["active"]]
            kind = "hit" if hand["total"] < 12 and "hit" in offered else "stand"
            t = time.time()
            r = await self._post(c, "decide", {"step": e.data["step"], "decision": kind})
        self._phase_count("decisions")
        if r is None:
            return
        if r.status_code == 200:
            self.decisions.append(time.time() - t)
        else:
            self.decisions_refused += 1
            if early(t, e.data.get("deadline")):
                self.decisions_refused_early += 1
            code = str(r.json().get("code"))
            self.refusals[code] = self.refusals.get(code, 0) + 1

    def _phase_count(self, kind: str) -> None:
        if self.meter is not None and self.meter.phase == kind:
            self.answered[kind] = self.answered.get(kind, 0) + 1


def expected_ids(db: str, data_dir: Path, after: int, sessions: list[str]) -> dict[str, list[int]]:
    """What each session's stream should have carried, from the log (the stream's fold)."""
    from api.table_messages import TableFold
    from ledger.bootstrap import bootstrap
    from ledger.settings import Settings

    app = bootstrap(Settings(data_dir=data_dir, database_url=db))
    try:
        fold = TableFold(app, TABLE)
        top = int(app.recorder.max_notification_id() or 0)
        out: dict[str, list[int]] = {s: [] for s in sessions}
        position = after
        while position < top:
            messages, position = fold.read(position, top, 5000)
            for m in messages:
                for s in sessions if m.session is None else [m.session]:
                    if s in out:
                        out[s].append(m.position)
        return out
    finally:
        app.close()


def run(
    m: int,
    load: Load,
    profile: Path | None = None,
    server_tree: Path | None = None,
    procs: int = 1,
    workers: int = 1,
    shoe_seed: str | None = None,
    switch_ms: float | None = None,
    tables_process: bool = False,
) -> dict[str, Any]:
    schema = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    db = f"{PG}?schema={schema}"
    data_dir = Path(tempfile.mkdtemp(prefix="bench-table-http-"))
    env = {
        "CROUPIER_DATABASE_URL": db,
        # one address (this load generator) speaks for every player here
        "CROUPIER_REQUESTS_PER_ADDRESS_PER_SECOND": "1000000",
        "CROUPIER_REQUESTS_PER_CREDENTIAL_PER_SECOND": "1000000",
        # and holds every player's connections and stream (configuration-limits.md)
        "CROUPIER_MAX_CONNECTIONS": "100000",
        "CROUPIER_MAX_CONNECTIONS_PER_ADDRESS": "100000",
        "CROUPIER_STREAMS_PER_ADDRESS": "100000",
        "CROUPIER_MAX_STREAMS": "100000",
        "CROUPIER_SESSION_COMMANDS_PER_SECOND": "1000000",
        # every player's session and seat held in the cache, as an operator sizes it for a
        # table this large (the default, 64 MiB, holds about 8,000 aggregates: at 10,000
        # players each batch read seats and sessions back from the store)
        "CROUPIER_CACHE_BUDGET_MB": str(max(64, m // 32)),
    }
    serve = ["--workers", str(workers)] if workers > 1 else []
    if switch_ms is not None:  # else the interpreter's (ledger.switch_policy)
        env["CROUPIER_SWITCH_INTERVAL_MS"] = str(switch_ms)
    entry = None
    if shoe_seed is not None:  # every shoe the same: runs of two trees compare
        entry = Path(__file__).resolve().parent / "fixed_shoe_serve.py"
        env["BENCH_SHOE_SEED"] = shoe_seed
    tables = None
    if tables_process:  # the table's runner in a process of its own; the players' on a front
        _, _, tables = launch(
            data_dir,
            startup_seconds=180,
            root=server_tree,
            entry=entry,
            **env,
            CROUPIER_ROLE="tables",
        )
        env["CROUPIER_ROLE"] = "front"
    try:
        base, _, proc = launch(
            data_dir, *serve, startup_seconds=180, root=server_tree, entry=entry, **env
        )
    except BaseException:
        if tables is not None:
            stop(tables)
        raise
    load_before = os.getloadavg()
    try:
        tokens = json.loads((data_dir / "api-tokens.json").read_text())
        op_headers = {"Authorization": f"Bearer {tokens['operator']}"}
        config = {
            "betting_ms": betting_ms(m),
            "insurance_ms": INSURANCE_MS,
            "step_ms": STEP_MS,
            "grace_ms": 300,
            "settle_batch": 250,
        }
        httpx.post(
            f"{base}/v1/tables",
            json={"table": TABLE, "currency": "EUR", "config": config},
            headers={**op_headers, "Idempotency-Key": "bench-table"},
            timeout=60,
        ).raise_for_status()
        created = time.time()  # the table's first round opens now, its window running
        meter = Meter(proc.pid, db, profile, None if tables is None else tables.pid)
        # the play starts once the first round's window has closed with no bet (the round
        # then waits for its first bet, which opens a full window): every run the same
        not_before = created + betting_ms(m) / 1000 + FIRST_WINDOW_MARGIN_S
        result = asyncio.run(play(base, op_headers, m, load, meter, procs, not_before))
        result.update(gc_pauses(base, op_headers))
        # > 0: the players started betting into the first round's window with this much
        # of it left (the bets answered after its close are refused, rightly); <= 0: it
        # had closed with no bet, and the first bet opened a full window
        result["first_window_left_s"] = betting_ms(m) / 1000 - (meter.started - created)
        commands = result["bets_ok"] + result["decisions"]
        for key in ("server", "pg"):
            result[f"{key}_ms_per_seat_round"] = 1000 * result[f"{key}_cpu_s"] / (m * load.rounds)
            result[f"{key}_ms_per_command"] = (
                1000 * result[f"{key}_cpu_s"] / commands if commands else None
            )
        result["workers"] = workers
        result["shoe_seed"] = shoe_seed
        result["switch_ms"] = switch_ms
        result["tables_process"] = tables_process
        result["lost"], result["expected"] = lost(result, db, data_dir)
    finally:
        for server in (proc, tables):
            if server is not None:
                stop(server)
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    result["load"] = (load_before, os.getloadavg())
    return result


def gc_pauses(base: str, headers: dict[str, str]) -> dict[str, Any]:
    """The server's garbage-collector pauses over its life (``croupier_gc_pause_seconds``,
    every generation): how many, their total, how many took over 50 and over 100 ms,
    and the longest's bucket (its upper bound, in ms). Every thread of the process
    stops while one runs: a decision arriving then waits it out. Empty when the server
    does not export them (an older tree)."""
    text = httpx.get(f"{base}/metrics", headers=headers, timeout=30).text
    count = total = 0.0
    at_most: dict[float, float] = {}  # bucket bound -> collections at most that long
    for line in text.splitlines():
        if not line.startswith("croupier_gc_pause_seconds"):
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("croupier_gc_pause_seconds_count"):
            count += float(value)
        elif name.startswith("croupier_gc_pause_seconds_sum"):
            total += float(value)
        elif 'le="' in name:
            bound = name.split('le="')[1].split('"')[0]
            le = float("inf") if bound == "+Inf" else float(bound)
            at_most[le] = at_most.get(le, 0.0) + float(value)
    if not count:
        return {}
    longest = min((le for le, n in at_most.items() if n >= count), default=float("inf"))
    return {
        "gc_pauses": int(count),
        "gc_pause_s": round(total, 3),
        "gc_pauses_over_50ms": int(count - at_most.get(0.05, 0.0)),
        "gc_pauses_over_100ms": int(count - at_most.get(0.1, 0.0)),
        "gc_longest_at_most_ms": None if longest == float("inf") else round(1000 * longest),
    }


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server; never leave one running after a failed run."""
    proc.terminate()
    try:
        proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)


@dataclass
class Seen:
    """What the figures need of one client after the play (picklable: a child process
    hands it back): its session, the last position it had, and its messages."""

    session: str
    last_id: int | None
    events: list[Received]


@dataclass
class Slice:
    """One load generator's share of the play: its players' figures, its own CPU and the
    lateness of its event loop."""

    bench: dict[str, Any]
    seen: list[Seen]
    first_ids: list[int]
    reconnects: int
    client_cpu_s: float
    elapsed_s: float
    lags: list[float]


async def play_slice(
    base: str,
    sessions: list[tuple[str, str]],
    load: Load,
    ready: Callable[[], Awaitable[None]],
    meter: Meter | None = None,
) -> Slice:
    """Connect ``sessions``' players, call ``ready`` once each has its socket or stream
    (it returns when the play starts), then play the load's rounds."""
    bench = Bench(load, meter)
    kind = SocketClient if load.mode == "ws" else TableClient
    clients: list[Client] = [
        kind(base, TABLE, sid, token, answer_s=load.answer_s) for sid, token in sessions
    ]
    start = asyncio.Event()
    tasks = [asyncio.create_task(bench.player(c, start)) for c in clients]
    pairs = list(zip(clients, tasks, strict=True))
    while any(not c.connected.is_set() and not t.done() for c, t in pairs):
        await asyncio.sleep(0.5)
    bench.players = sum(c.connected.is_set() for c in clients)
    first_ids = [c.last_id or 0 for c in clients if c.connected.is_set()]
    await ready()
    start.set()
    t0, client0 = time.time(), time.process_time()
    lags: list[float] = []
    probe = asyncio.create_task(loop_lag(lags))
    await asyncio.gather(*tasks)
    elapsed = time.time() - t0
    client_cpu = time.process_time() - client0
    probe.cancel()
    figures = {
        "connected": sum(c.connected.is_set() for c in clients),
        "bets_ok": bench.bets_ok,
        "bets_refused": bench.bets_refused,
        "bets_refused_early": bench.bets_refused_early,
        "decisions_refused_early": bench.decisions_refused_early,
        "bet_times": bench.bet_times,
        "decisions": bench.decisions,
        "decisions_refused": bench.decisions_refused,
        "refusals": bench.refusals,
        "connect_failed": bench.connect_failed,
        "unanswered": bench.unanswered,
        "stalled": bench.stalled,
        "answered": bench.answered,
    }
    out = Slice(
        figures,
        [Seen(c.session, c.last_id, c.events) for c in clients],
        first_ids,
        sum(max(0, c.streams_opened - 1) for c in clients),
        client_cpu,
        elapsed,
        lags,
    )
    for c in clients:
        await c.aclose()
    return out


def child(
    base: str,
    sessions: list[tuple[str, str]],
    load: Load,
    started: Any,
    go: Any,
    results: Any,
) -> None:
    """A load generator process of its own (``--procs``): its slice of the players."""

    async def ready() -> None:
        started.put(os.getpid())
        await asyncio.to_thread(go.wait)

    try:
        got = asyncio.run(play_slice(base, sessions, load, ready))
        # plain tuples: this module is __mp_main__ here, not in the parent
        seen = [(c.session, c.last_id, c.events) for c in got.seen]
        fields = (got.first_ids, got.reconnects, got.client_cpu_s, got.elapsed_s, got.lags)
        results.put((got.bench, seen, *fields))
    except BaseException as e:  # the parent must not wait for ever
        started.put(os.getpid())
        results.put(repr(e))
        raise


async def play(
    base: str,
    op_headers: dict[str, str],
    m: int,
    load: Load,
    meter: Meter,
    procs: int = 1,
    not_before: float = 0.0,
) -> dict[str, Any]:
    """Set up ``m`` players, connect them, and play once every one has connected and the
    clock has passed ``not_before`` (epoch seconds)."""
    sessions = await setup(base, op_headers, m)

    async def ready() -> None:
        await asyncio.sleep(max(0.0, not_before - time.time()))
        meter.start()

    if procs == 1:
        slices = [await play_slice(base, sessions, load, ready, meter)]
    else:
        slices = await asyncio.to_thread(
            spread_over, procs, base, sessions, load, meter, not_before
        )
    cpu = meter.stop()
    return figures_of(m, load, slices, cpu)


def spread_over(
    procs: int,
    base: str,
    sessions: list[tuple[str, str]],
    load: Load,
    meter: Meter,
    not_before: float = 0.0,
) -> list[Slice]:
    """The players dealt over ``procs`` load generator processes (spawned: none inherits
    this one's event loop); the play starts once every one has connected its players."""
    ctx = multiprocessing.get_context("spawn")
    started, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    parts = [sessions[i::procs] for i in range(procs)]
    workers = [
        ctx.Process(target=child, args=(base, part, load, started, go, results)) for part in parts
    ]
    for w in workers:
        w.start()
    try:
        for _ in workers:
            started.get(timeout=1800)
        time.sleep(max(0.0, not_before - time.time()))
        meter.start()
        go.set()
        got = [results.get(timeout=1800) for _ in workers]
    finally:
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.kill()
    failed = [g for g in got if isinstance(g, str)]
    if failed:
        raise RuntimeError(f"a load generator failed: {failed}")
    return [Slice(b, [Seen(*c) for c in seen], *rest) for b, seen, *rest in got]


def figures_of(m: int, load: Load, slices: list[Slice], cpu: dict[str, float]) -> dict[str, Any]:
    fan: list[float] = []
    worst: list[float] = []
    by_message: dict[int, list[float]] = {}
    for part in slices:
        for c in part.seen:
            for e in c.events:
                if e.type in ("bets-closed", "step-closed") and e.id is not None:
                    closed = _ts(e.data["at"])
                    by_message.setdefault(e.id, []).append(e.at - closed)
    for lat in by_message.values():
        fan.extend(lat)
        worst.append(max(lat))
    # the settlement of every seat: the dealer's last card (``dealer-played``'s ``at``,
    # the server's time) to the first client having ``round-settled`` (its ``at`` is the
    # settling phase's start, not its end)
    played: dict[str, float] = {}
    settled: dict[str, float] = {}
    for part in slices:
        for c in part.seen:
            for e in c.events:
                code = str(e.data.get("code"))
                if e.type == "dealer-played" and "at" in e.data:
                    played.setdefault(code, _ts(e.data["at"]))
                elif e.type == "round-settled":
                    settled[code] = min(settled.get(code, e.at), e.at)
    settles = [settled[k] - played[k] for k in played if k in settled]
    bet_times: dict[str, list[tuple[float, float]]] = {}
    decisions: list[float] = []
    refusals: dict[str, int] = {}
    answered: dict[str, int] = {}
    for part in slices:
        for code, times in part.bench["bet_times"].items():
            bet_times.setdefault(code, []).extend(times)
        decisions += part.bench["decisions"]
        for table in ("refusals", "answered"):
            into = refusals if table == "refusals" else answered
            for k, n in part.bench[table].items():
                into[k] = into.get(k, 0) + n
    window = sum(
        max(d for _, d in times) - min(t for t, _ in times) for times in bet_times.values()
    )
    bets_ok = sum(part.bench["bets_ok"] for part in slices)
    elapsed = max(part.elapsed_s for part in slices)
    client_cpu = sum(part.client_cpu_s for part in slices)
    lags = [lag for part in slices for lag in part.lags]
    return {
        "mode": load.mode,
        "players": m,
        "spread": load.spread,
        "side_bet": load.side_bet,
        "procs": len(slices),
        "elapsed_s": elapsed,
        "bets_ok": bets_ok,
        "bets_refused": sum(part.bench["bets_refused"] for part in slices),
        "bets_refused_early": sum(part.bench["bets_refused_early"] for part in slices),
        "bets_per_s": bets_ok / window if window else float("nan"),
        "fanout_p50_ms": 1000 * pct(fan, 50),
        "fanout_p99_ms": 1000 * pct(fan, 99),
        "fanout_last_client_p99_ms": 1000 * pct(worst, 99),
        "decision_p50_ms": 1000 * pct(decisions, 50),
        "decision_p99_ms": 1000 * pct(decisions, 99),
        "decisions": len(decisions),
        "decisions_refused": sum(part.bench["decisions_refused"] for part in slices),
        "decisions_refused_early": sum(part.bench["decisions_refused_early"] for part in slices),
        "settle_max_s": max(settles) if settles else float("nan"),
        "refusals": refusals,
        "connect_failed": sum(part.bench["connect_failed"] for part in slices),
        "unanswered": sum(part.bench["unanswered"] for part in slices),
        "stalled": sum(part.bench["stalled"] for part in slices),
        "reconnects": sum(part.reconnects for part in slices),
        **cpu,
        # the load generators' own CPU over the play, all processes, and per process the
        # busiest one's share of a core (near 1: the client, not the server, sets the pace)
        "client_cpu_s": client_cpu,
        "client_cpu_share": max(part.client_cpu_s / part.elapsed_s for part in slices),
        "client_lag_p50_ms": 1000 * pct(lags, 50),
        "client_lag_p99_ms": 1000 * pct(lags, 99),
        **{f"profile_{k}": n for k, n in answered.items()},
        "_clients": [c for part in slices for c in part.seen],
        "_after": min(i for part in slices for i in part.first_ids),
    }


async def loop_lag(lags: list[float], every: float = 0.05) -> None:
    """How late this load generator's event loop wakes a 50 ms sleep, all the play: a
    busy client is late to read every answer and message, and its latencies are then
    its own, not the server's."""
    while True:
        t = time.monotonic()
        await asyncio.sleep(every)
        lags.append(time.monotonic() - t - every)


def lost(result: dict[str, Any], db: str, data_dir: Path) -> tuple[int, int]:
    clients: list[Seen] = result.pop("_clients")
    after = result.pop("_after")
    want = expected_ids(db, data_dir, after, [c.session for c in clients])
    missing = expected = 0
    for c in clients:
        got = {e.id for e in c.events if e.id is not None and e.id > after}
        should = [i for i in want[c.session] if i <= (c.last_id or 0)]
        expected += len(should)
        missing += len(set(should) - got)
        # and every message the client saw after its stream ended was also wanted: none
    return missing, expected


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--players", type=int, nargs="+", default=[100, 500, 1000])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mode", nargs="+", choices=["ws", "sse"], default=["ws", "sse"])
    ap.add_argument("--profile", type=Path, help="a directory for py-spy's folded stacks")
    ap.add_argument("--server-tree", type=Path, help="run this checkout's server instead")
    ap.add_argument(
        "--procs",
        type=int,
        default=1,
        help="deal the players over this many load generator processes (one process's"
        " event loop, busy with a thousand clients, is late to read their answers)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="croupier serve --workers N: the players' sockets dealt over N processes by"
        " the kernel, the table's runner fenced to one of them",
    )
    ap.add_argument(
        "--tables-process",
        action="store_true",
        help="run the table's runner in a second croupier serve on the same database"
        " (CROUPIER_ROLE=tables), the players' server a front (CROUPIER_ROLE=front)",
    )
    ap.add_argument("--label", default="", help="added to each run's name in the record")
    ap.add_argument(
        "--switch-ms",
        type=float,
        help="the server's CROUPIER_SWITCH_INTERVAL_MS (default: unset, the interpreter's 5 ms)",
    )
    ap.add_argument(
        "--shoe-seed",
        metavar="HEX",
        help="the server draws every seed as these 64 hex digits (bench/fixed_shoe_serve.py):"
        " each run deals the same shoe, so runs of two trees compare (one worker)",
    )
    ap.add_argument(
        "--spread",
        action="store_true",
        help="send each decision at a random time in the first half of its window (the"
        " issue's load), not at once",
    )
    ap.add_argument(
        "--side-bet",
        action="store_true",
        help=f"each player adds a {SIDE_BET} side bet to its main bet (the issue's load)",
    )
    args = ap.parse_args()
    if args.shoe_seed is not None:
        try:
            if len(bytes.fromhex(args.shoe_seed)) != 32:
                raise ValueError
        except ValueError:
            ap.error("--shoe-seed: 64 hex digits")
        if args.workers != 1:
            ap.error("--shoe-seed needs --workers 1 (each worker would draw its own)")
    if args.procs > 1 and args.profile is not None:
        ap.error("--profile needs the phases one load generator sees: --procs 1")
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    for m in args.players:
        for k in range(args.runs):
            baseline: dict[str, Any] | None = None
            for mode in sorted(args.mode):  # sse (the baseline), then ws
                name = f"{mode} players={m} run={k + 1}"
                record = Run("bench_table_http", f"{name} {args.label}".strip())
                profile = None
                if args.profile is not None:
                    profile = args.profile / f"{mode}-{m}-{k + 1}{args.label}.txt".replace(" ", "")
                # a command waits past the betting window: at 10,000 players the bets
                # queue for longer than the client's usual minute
                answer_s = max(60.0, betting_ms(m) / 1000 + 60)
                load = Load(args.rounds, mode, args.spread, args.side_bet, answer_s)
                r = run(
                    m,
                    load,
                    profile,
                    args.server_tree,
                    args.procs,
                    args.workers,
                    args.shoe_seed,
                    args.switch_ms,
                    args.tables_process,
                )
                r.pop("load")
                # a figure of nothing (no decision answered: no p99) is recorded as null
                figures = {
                    key: (None if math.isnan(v) else round(v, 1)) if isinstance(v, float) else v
                    for key, v in r.items()
                }
                record.done(figures, baseline if mode == "ws" else None)
                if mode == "sse":
                    baseline = figures


if __name__ == "__main__":
    main()
