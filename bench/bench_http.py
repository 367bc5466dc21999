"""Benchmark: game rounds over HTTP, one and several workers: Red Dog on SQLite, Jacks or
Better 4-line on PostgreSQL (``--games``; ``--store`` puts both on one store).

``croupier serve --workers W`` runs in its own processes (uvicorn, loopback only, access
log off) on a fresh store (a PostgreSQL schema, or a SQLite file: one worker only); this
process is the load generator: one keep-alive
HTTP/1.1 connection per session, as game clients are, on raw asyncio streams with orjson
(``--client httpx``: the httpx client used before, for comparison; it costs several times
the CPU per request). A Jacks or Better round is deal (coin value 10, 5 coins, 4 lines),
draw with the game's proposed holds, collect if a win is pending; a Red Dog round is a bet
of 1,000 and, when the round stays open, see (no raise); every request is timed. For each
game, each ``--workers`` value and each of ``--repeats`` runs:

1. closed loop: ``--clients`` clients (one session each, no think time) play rounds for
   ``--seconds``: the saturation rate;
2. open loop: rounds arrive as a Poisson process at each ``--open-loop`` fraction of that
   run's saturation rate for ``--seconds`` each, on a pool of ``--pool`` sessions (an
   arrival waits for an idle session only when all are busy); request latency, and the
   round's latency from its arrival (waiting included);
3. one client alone plays ``--solo`` rounds (latency without queueing).

Prints per phase rounds/s, request p50/p99, CPU per round (every server process, the load
generator), the load average; then per phase the median and spread over the runs and the
ratio of each worker count to the first. ``--in-process`` adds, in each run, the same
closed loop with threads calling the ``Casino`` directly on a store of its own (the HTTP
layer's cost) and prints the ratio of HTTP to in-process rounds/s of that run. Every
closed loop is recorded (``bench/record.py``, ``bench/results/bench_http.jsonl``) with its
in-process baseline when measured. ``--baseline-root DIR`` (another checkout, e.g. of the
commit before a change) also runs, in each run, the same closed loop on a server started
from DIR, and the open loops of both servers at the saturation of the one run first (the
same arrivals: the two request p99s compare at one load), and prints this server's
rounds/s and CPU per round over the baseline's: on a machine whose load moves from one
minute to the next, a ratio of two servers measured side by side says more than either
figure. The two take turns going first (the baseline in the second run, the fourth...):
the server run second had the lower p99 in five of six pairs when the order was fixed.

With N clients and no think time, latency is mostly queueing: by Little's law the mean
is about N / (requests per second). The machine (2 cores here) runs the server, the load
generator and PostgreSQL at once, and other work shares it: figures are noisy.

    python bench/bench_http.py [--games red-dog jb-4line] [--store sqlite|postgres]
        [--workers 1 2] [--repeats 3] [--clients 50] [--seconds 15]
        [--open-loop 0.5 0.75 0.9] [--pool 200] [--solo 30] [--in-process]
        [--client raw|httpx] [--no-record] [--label TEXT] [--baseline-root DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.record import Run as Record  # noqa: E402  # after the path set-up above
from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.casino import Casino  # noqa: E402
from ledger.results import RoundPlayed  # noqa: E402
from ledger.settings import Settings  # noqa: E402

PG_URL = os.environ.get("CROUPIER_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
VARIANT, COIN_VALUE, COINS, LINES = "jb-4line", 10, 5, 4
DEAL = {"variant": VARIANT, "coin_value": COIN_VALUE, "coins": COINS, "lines": LINES}
RED_DOG_BET = 1_000
GAMES = {"red-dog": "sqlite", "jb-4line": "postgres"}  # each game's store by default
GAME = "jb-4line"
BUY_IN = 10_000_000
OPERATOR = "bench-operator-" + secrets.token_hex(8)
AUDITOR = "bench-auditor-" + secrets.token_hex(8)

Latencies = dict[str, list[float]]


@dataclass
class Run:
    wall: float
    rounds: int
    lat: Latencies
    cpu: dict[str, float]
    retries: int
    load: float = field(default_factory=lambda: os.getloadavg()[0])
    gc: dict[str, float] = field(default_factory=dict)
    """The server's garbage collections in the run (``croupier_gc_pause_seconds``, every
    worker): ``full`` collections, ``pause_ms`` all of them took, ``over_50ms``."""

    @property
    def rate(self) -> float:
        return self.rounds / self.wall

    def requests(self) -> list[float]:
        return [v for kind, values in self.lat.items() if kind != "round" for v in values]


@contextmanager
def fresh_store(store: str) -> Iterator[str | None]:
    """A new PostgreSQL schema's URL, or None: SQLite in the run's data directory."""
    if store == "sqlite":
        yield None
        return
    with fresh_schema() as url:
        yield url


@contextmanager
def fresh_schema() -> Iterator[str]:
    schema = "bench_http_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU time of a process and its children (uvicorn's workers) so far."""
    total = cpu_seconds(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        with suppress(FileNotFoundError):
            total += cpu_seconds(int(child))
    return total


# -- HTTP ------------------------------------------------------------------------------------


@contextmanager
def server(
    database_url: str | None, data_dir: Path, interval: float, workers: int, root: Path = ROOT
) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {
        **os.environ,
        "CROUPIER_DATA_DIR": str(data_dir),
        "CROUPIER_OPERATOR_TOKEN": OPERATOR,
        "CROUPIER_AUDITOR_TOKEN": AUDITOR,
        "CROUPIER_CHECKPOINT_INTERVAL_SECONDS": str(interval),
        # One load generator address sends everything: not a limit this benchmark measures.
        "CROUPIER_REQUESTS_PER_ADDRESS_PER_SECOND": "1000000",
        # Nor its connections, nor a session's command rate (configuration-limits.md).
        "CROUPIER_MAX_CONNECTIONS": "100000",
        "CROUPIER_MAX_CONNECTIONS_PER_ADDRESS": "100000",
        "CROUPIER_SESSION_COMMANDS_PER_SECOND": "0",
        "PYTHONPATH": str(root),
    }
    env.pop("CROUPIER_DATABASE_URL", None)
    if database_url is not None:
        env["CROUPIER_DATABASE_URL"] = database_url
    cmd = [sys.executable, "-m", "api.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", "warning", "--no-access-log", "--workers", str(workers)]
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"serve-{data_dir.name}.log"
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("croupier serve did not start: " + log_path.read_text())
            time.sleep(0.2)
        # The catalogue (exact video poker RTP) is computed in the background at start-up
        # in every worker; ask each (new connections spread over the workers) so it does
        # not share the CPU with the measured run.
        for _ in range(4 * workers):
            with httpx.Client(base_url=base, timeout=60) as c:
                c.get("/v1/games", headers=auth(OPERATOR)).raise_for_status()
        yield base, proc.pid
    finally:
        proc.terminate()  # graceful: each worker closes its Casino and seals a last checkpoint
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        said = [
            line
            for line in log_path.read_text().splitlines()
            if line.strip() and "genesis key" not in line and "croupier serve:" not in line
        ]
        said = [
            ln for ln in said if not ln.startswith(("operator and", "session-token", "workers:"))
        ]
        if said:
            print("croupier serve said:\n" + "\n".join(said[-20:]), file=sys.stderr)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class TransportError(Exception):
    """The connection dropped or the server closed it: the request may be re-sent."""


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams (the load generator's client).

    httpx costs 6-8 ms of CPU per round here (its models, header handling, the anyio
    machinery): as much as a quarter of the server's. This sends a request with one
    write and reads the response by its Content-Length (or chunks), nothing else. An
    idle connection is re-opened after ``KEEPALIVE`` seconds, below uvicorn's 5 s, so no
    request is sent on a connection the server is closing.
    """

    KEEPALIVE = 2.0

    def __init__(self, base: str) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = 0.0

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(self, path: str, headers: bytes, body: bytes) -> tuple[int, bytes]:
        if self.writer is not None and time.monotonic() - self.used > self.KEEPALIVE:
            await self.close()
        if self.writer is None:
            try:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            except OSError as e:
                raise TransportError(str(e)) from e
        assert self.reader is not None
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        ).encode()
        try:
            self.writer.write(head + headers + b"\r\n" + body)
            raw = await self.reader.readuntil(b"\r\n\r\n")
            lines = raw.split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            length, chunked, closing = -1, False, False
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
                elif name == b"connection":
                    closing = b"close" in value.lower()
            if chunked:
                parts = []
                while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                    parts.append(await self.reader.readexactly(size + 2))
                await self.reader.readuntil(b"\r\n")
                data = b"".join(p[:-2] for p in parts)
            else:
                data = await self.reader.readexactly(length) if length > 0 else b""
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            await self.close()
            raise TransportError(str(e)) from e
        self.used = time.monotonic()
        if closing:
            await self.close()
        return status, data


class HttpxConnection:
    """The same interface on httpx (the load generator before), for comparison."""

    def __init__(self, base: str) -> None:
        # Idle connections expire on the client before uvicorn's 5 s keep-alive closes them.
        limits = httpx.Limits(max_connections=1, keepalive_expiry=2.0)
        self.client = httpx.AsyncClient(base_url=base, limits=limits, timeout=120)

    async def close(self) -> None:
        await self.client.aclose()

    async def request(self, path: str, headers: bytes, body: bytes) -> tuple[int, bytes]:
        parsed = dict(
            (name.decode(), value.strip().decode())
            for name, _, value in (h.partition(b":") for h in headers.split(b"\r\n") if h)
        )
        parsed["Content-Type"] = "application/json"
        try:
            r = await self.client.post(path, content=body, headers=parsed)
        except httpx.TransportError as e:
            raise TransportError(str(e)) from e
        return r.status_code, r.content


CLIENTS: dict[str, Callable[[str], Connection | HttpxConnection]] = {
    "raw": Connection,
    "httpx": HttpxConnection,
}
CLIENT = "raw"


class HttpPlayer:
    def __init__(self, client: Connection | HttpxConnection, name: str) -> None:
        self.client = client
        self.name = name
        self.sid = ""
        self.token = ""
        self.requests = 0
        self.retries = 0
        self.auth: dict[str, bytes] = {}

    def _auth(self, token: str) -> bytes:
        if token not in self.auth:
            self.auth[token] = f"Authorization: Bearer {token}\r\n".encode()
        return self.auth[token]

    async def post(self, path: str, token: str, body: Any, lat: Latencies, kind: str) -> Any:
        self.requests += 1
        headers = self._auth(token) + f"Idempotency-Key: {self.name}-{self.requests}\r\n".encode()
        payload = b"" if body is None else orjson.dumps(body)
        t = time.perf_counter()
        for attempt in range(3):
            try:
                status, data = await self.client.request(path, headers, payload)
                break
            except TransportError:
                # What a game client does on a dropped connection: send it again with the
                # same Idempotency-Key (at most once on the ledger, whatever happened).
                self.retries += 1
                if attempt == 2:
                    raise
        lat[kind].append(time.perf_counter() - t)
        if status >= 300:
            raise RuntimeError(f"{kind}: {status} {data.decode(errors='replace')}")
        return orjson.loads(data)

    async def open(self) -> None:
        lat: Latencies = defaultdict(list)
        account = {"player_id": self.name, "currency": "EUR"}
        await self.post("/v1/accounts", OPERATOR, account, lat, "setup")
        deposit = {"amount": BUY_IN}
        await self.post(f"/v1/accounts/{self.name}/deposits", OPERATOR, deposit, lat, "setup")
        session = {"player_id": self.name, "buy_in": BUY_IN}
        doc = await self.post("/v1/sessions", OPERATOR, session, lat, "setup")
        self.sid, self.token = doc["session_id"], doc["token"]

    async def play_round(self, lat: Latencies) -> None:
        if GAME == "red-dog":
            base = f"/v1/sessions/{self.sid}/red-dog"
            r = await self.post(f"{base}/bet", self.token, {"bet": RED_DOG_BET}, lat, "bet")
            if r["status"] == "open":  # not settled at the deal: see the third card
                r = await self.post(f"{base}/see", self.token, None, lat, "see")
            assert r["status"] == "settled", r
            return
        base = f"/v1/sessions/{self.sid}/video-poker"
        r = await self.post(f"{base}/deal", self.token, DEAL, lat, "deal")
        holds = r["view"]["recommended"]
        r = await self.post(f"{base}/draw", self.token, {"holds": holds}, lat, "draw")
        if r["status"] == "open":  # a win is pending: take it
            r = await self.post(f"{base}/collect", self.token, None, lat, "collect")
        assert r["status"] == "settled", r


async def players(stack: AsyncExitStack, base: str, tag: str, n: int) -> list[HttpPlayer]:
    # One connection per player, as game clients are.
    made = []
    for k in range(n):
        conn = CLIENTS[CLIENT](base)
        stack.push_async_callback(conn.close)
        made.append(HttpPlayer(conn, f"{tag}{k}"))
    for k in range(0, n, 50):  # open them 50 at a time
        await asyncio.gather(*(p.open() for p in made[k : k + 50]))
    await asyncio.gather(*(p.play_round(defaultdict(list)) for p in made))  # warm-up
    return made


def gc_pauses(base: str) -> dict[str, float]:
    """The server's garbage-collection histogram so far (GET /metrics): full collections,
    the seconds all collections took, and how many took more than 50 ms; empty when the
    server does not export it (an older tree as the baseline)."""
    text = httpx.get(f"{base}/metrics", headers=auth(OPERATOR), timeout=10).text
    out = {"full": 0.0, "pause_s": 0.0, "count": 0.0, "under_50ms": 0.0}
    for line in text.splitlines():
        if not line.startswith("croupier_gc_pause_seconds"):
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("croupier_gc_pause_seconds_count"):
            out["count"] += float(value)
            if 'generation="2"' in name:
                out["full"] += float(value)
        elif name.startswith("croupier_gc_pause_seconds_sum"):
            out["pause_s"] += float(value)
        elif 'le="0.05"' in name:
            out["under_50ms"] += float(value)
    return out if out["count"] else {}


def measured(pid: int, base: str | None = None) -> Callable[[float, int, Latencies, int], Run]:
    server_cpu, client_cpu = tree_cpu(pid), time.process_time()
    gc0 = gc_pauses(base) if base is not None else {}

    def finish(wall: float, done: int, lat: Latencies, retries: int) -> Run:
        cpu = {
            "server": tree_cpu(pid) - server_cpu,
            "load generator": time.process_time() - client_cpu,
        }
        gc: dict[str, float] = {}
        gc1 = gc_pauses(base) if base is not None else {}
        if gc0 and gc1:
            gc = {
                "full": gc1["full"] - gc0["full"],
                "pause_ms": round(1000 * (gc1["pause_s"] - gc0["pause_s"]), 1),
                "over_50ms": (gc1["count"] - gc1["under_50ms"])
                - (gc0["count"] - gc0["under_50ms"]),
            }
        return Run(wall, done, lat, cpu, retries, gc=gc)

    return finish


async def closed_loop(base: str, pid: int, tag: str, clients: int, seconds: float) -> Run:
    async with AsyncExitStack() as stack:
        made = await players(stack, base, tag, clients)
        lat: Latencies = defaultdict(list)
        done = 0
        deadline = time.perf_counter() + seconds

        async def play(p: HttpPlayer) -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                await p.play_round(lat)
                done += 1

        finish = measured(pid, base)
        start = time.perf_counter()
        await asyncio.gather(*(play(p) for p in made))
        return finish(time.perf_counter() - start, done, lat, sum(p.retries for p in made))


async def open_loop(
    base: str, pid: int, tag: str, pool: int, rate: float, seconds: float, seed: int
) -> Run:
    """Rounds arriving as a Poisson process at ``rate`` per second for ``seconds``."""
    async with AsyncExitStack() as stack:
        made = await players(stack, base, tag, pool)
        idle: asyncio.Queue[HttpPlayer] = asyncio.Queue()
        for p in made:
            idle.put_nowait(p)
        lat: Latencies = defaultdict(list)
        rng = random.Random(seed)

        async def arrive(at: float) -> None:
            p = await idle.get()
            try:
                await p.play_round(lat)
            finally:
                idle.put_nowait(p)
            lat["round"].append(time.perf_counter() - at)

        tasks = []
        finish = measured(pid, base)
        start = time.perf_counter()
        at = start
        while True:
            at += rng.expovariate(rate)
            if at - start > seconds:
                break
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(arrive(at)))
        await asyncio.gather(*tasks)
        return finish(time.perf_counter() - start, len(tasks), lat, sum(p.retries for p in made))


def open_loops(
    args: argparse.Namespace,
    base: str,
    pid: int,
    run: int,
    saturation: float,
    heading: str,
    of: str,
) -> list[tuple[float, Run]]:
    """Each open loop of ``--open-loop`` against the server at ``base``, at that fraction
    of ``saturation`` (rounds/s; the same seed for a run's arrivals on either server),
    each reported as "``heading`` F of ``of``"."""
    out = []
    for k, fraction in enumerate(args.open_loop):
        rate = fraction * saturation
        opened = asyncio.run(
            open_loop(base, pid, f"o{k}-", args.pool, rate, args.seconds, run * 10 + k)
        )
        report(f"{heading} {fraction:.0%} of {of} ({rate:.1f} rounds/s offered)", opened)
        out.append((fraction, opened))
    return out


async def solo(base: str, pid: int, tag: str, rounds: int) -> Run:
    async with AsyncExitStack() as stack:
        [p] = await players(stack, base, tag, 1)
        lat: Latencies = defaultdict(list)
        finish = measured(pid)
        start = time.perf_counter()
        for _ in range(rounds):
            await p.play_round(lat)
        return finish(time.perf_counter() - start, rounds, lat, p.retries)


# -- in-process ------------------------------------------------------------------------------


def run_in_process(app: Casino, tag: str, clients: int, seconds: float) -> Run:
    lock = threading.Lock()

    def timed(lat: Latencies, kind: str, call: Callable[[], RoundPlayed]) -> RoundPlayed:
        t = time.perf_counter()
        r = call()
        elapsed = time.perf_counter() - t
        with lock:
            lat[kind].append(elapsed)
        return r

    def play_round(sid: str, rid: str, lat: Latencies) -> None:
        if GAME == "red-dog":
            r = timed(lat, "bet", lambda: app.red_dog_bet(f"{rid}-b", sid, RED_DOG_BET))
            if r.status == "open":
                r = timed(lat, "see", lambda: app.red_dog_see(f"{rid}-s", sid))
            assert r.status == "settled", r
            return
        r = timed(
            lat, "deal", lambda: app.vp_deal(f"{rid}-d", sid, VARIANT, COIN_VALUE, COINS, LINES)
        )
        holds = r.view["recommended"]
        r = timed(lat, "draw", lambda: app.vp_act(f"{rid}-h", sid, ["draw", holds]))
        if r.status == "open":
            r = timed(lat, "collect", lambda: app.vp_act(f"{rid}-c", sid, ["collect"]))
        assert r.status == "settled", r

    def in_threads(target: Callable[[int, str], None], sessions: list[str]) -> None:
        threads = [threading.Thread(target=target, args=(n, s)) for n, s in enumerate(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    sessions = []
    for n in range(clients):
        player = f"{tag}{n}"
        app.open_account(f"{player}-open", player, "EUR")
        app.deposit(f"{player}-deposit", player, BUY_IN)
        sessions.append(app.open_session(f"{player}-session", player, BUY_IN).session_id)
    in_threads(lambda n, sid: play_round(sid, f"{tag}{n}-warm", defaultdict(list)), sessions)

    lat: Latencies = defaultdict(list)
    counts = [0] * clients
    deadline = time.perf_counter() + seconds

    def play(n: int, sid: str) -> None:
        i = 0
        while time.perf_counter() < deadline:
            play_round(sid, f"{tag}{n}-{i}", lat)
            counts[n] += 1
            i += 1

    cpu = time.process_time()
    start = time.perf_counter()
    in_threads(play, sessions)
    wall = time.perf_counter() - start
    return Run(wall, sum(counts), lat, {"process": time.process_time() - cpu}, 0)


# -- report ----------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def report(name: str, run: Run) -> None:
    every = run.requests()
    print(
        f"{name}: {run.rounds} rounds in {run.wall:.2f} s = {run.rate:.1f} rounds/s,"
        f" {len(every)} requests, load average {run.load:.2f}"
    )
    for kind in ("bet", "see", "deal", "draw", "collect", "all", "round"):
        values = every if kind == "all" else run.lat.get(kind, [])
        if values:
            what = "round from arrival" if kind == "round" else kind
            print(
                f"  {what:8} n={len(values):6}  p50 {pct(values, 0.50):8.2f} ms"
                f"  p99 {pct(values, 0.99):8.2f} ms  mean {statistics.fmean(values) * 1000:8.2f} ms"
            )
    if run.rounds:
        cpu = ", ".join(f"{k} {v / run.rounds * 1000:.1f} ms" for k, v in run.cpu.items())
        print(f"  CPU per round: {cpu}")
    if run.gc:
        print(
            f"  server's garbage collections: {run.gc['full']:.0f} full,"
            f" {run.gc['over_50ms']:.0f} over 50 ms, {run.gc['pause_ms']:.1f} ms in all"
        )
    if run.retries:
        print(f"  requests re-sent after a transport error: {run.retries}")
    sys.stdout.flush()


def spread(values: list[float], unit: str = "", digits: int = 1) -> str:
    return (
        f"median {statistics.median(values):.{digits}f}{unit}"
        f" (runs {', '.join(f'{v:.{digits}f}' for v in values)}{unit})"
    )


def summary(results: dict[tuple[int, str], list[Run]], workers: list[int]) -> None:
    print("\nsummary (median and every run):")
    phases = sorted({phase for _, phase in results}, key=_phase_order)
    for phase in phases:
        for w in workers:
            runs = results.get((w, phase), [])
            if not runs:
                continue
            rates = [r.rate for r in runs]
            p50 = [pct(r.requests(), 0.5) for r in runs]
            p99 = [pct(r.requests(), 0.99) for r in runs]
            loads = ", ".join(f"{r.load:.1f}" for r in runs)
            cpu = [r.cpu.get("server", 0.0) / max(1, r.rounds) * 1000 for r in runs]
            print(
                f"  {phase:18} workers {w}: {spread(rates)} rounds/s;"
                f" request p50 {spread(p50, ' ms')}; p99 {spread(p99, ' ms')};"
                f" server CPU per round {spread(cpu, ' ms', 2)}; load {loads}"
            )
        base = results.get((workers[0], phase))
        for w in workers[1:]:
            other = results.get((w, phase))
            if base and other:
                ratio = statistics.median(r.rate for r in other) / statistics.median(
                    r.rate for r in base
                )
                print(f"  {phase:18} rounds/s workers {w} / workers {workers[0]}: {ratio:.2f}")


def _phase_order(phase: str) -> tuple[int, str]:
    return (0 if phase.startswith("closed") else 2 if phase == "solo" else 1, phase)


def figures(run: Run) -> dict[str, float]:
    """What a record keeps of a run: rounds/s, request p50/p99 (ms), CPU per round (ms)."""
    out = {"rounds_per_s": round(run.rate, 1)}
    every = run.requests()
    if every:
        out["p50_ms"] = round(pct(every, 0.50), 2)
        out["p99_ms"] = round(pct(every, 0.99), 2)
    for who, seconds in run.cpu.items():
        if run.rounds:
            out[f"cpu_ms_per_round_{who.replace(' ', '_')}"] = round(seconds / run.rounds * 1000, 3)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--games", nargs="+", choices=sorted(GAMES), default=sorted(GAMES))
    p.add_argument("--store", choices=["sqlite", "postgres"], help="one store for every game")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--seconds", type=float, default=15.0, help="seconds per phase")
    p.add_argument("--open-loop", type=float, nargs="*", default=[0.5, 0.75, 0.9])
    p.add_argument("--pool", type=int, default=200, help="sessions of the open loop")
    p.add_argument("--solo", type=int, default=30, help="rounds of the lone client (default 30)")
    p.add_argument("--checkpoint-interval", type=float, default=1.0)
    p.add_argument("--in-process", action="store_true", help="also the in-process closed loop")
    p.add_argument("--client", choices=sorted(CLIENTS), default="raw", help="load generator")
    p.add_argument("--no-record", action="store_true", help="do not append to bench/results")
    p.add_argument("--label", default="", help="appended to each record's run name")
    p.add_argument(
        "--baseline-root",
        type=Path,
        help="another checkout: its server's closed loop is measured after each run's",
    )
    args = p.parse_args()
    global CLIENT, GAME
    CLIENT = args.client
    for game in args.games:
        GAME = game
        store = args.store or GAMES[game]
        workers = [w for w in args.workers if store == "postgres" or w == 1]
        what = (
            f"Red Dog rounds (bet {RED_DOG_BET}, see when the round stays open)"
            if game == "red-dog"
            else f"Jacks or Better 4-line rounds (deal {DEAL['coin_value']}x{DEAL['coins']}x"
            f"{DEAL['lines']}, draw the proposed holds, collect a pending win)"
        )
        print(
            f"{what} over HTTP; {store}; workers {workers}; {args.repeats} runs;"
            f" {args.seconds:.0f} s per phase; {args.client} client; {os.cpu_count()} cores;"
            f" load average {os.getloadavg()[0]:.2f} at start"
        )
        bench_game(args, game, store, workers)
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


def baseline_run(
    args: argparse.Namespace,
    store: str,
    tmp: str,
    run: int,
    w: int,
    results: dict[tuple[int, str], list[Run]],
    offered: float | None,
) -> tuple[Run, dict[str, float]]:
    """The closed loop on the baseline's server (``--baseline-root``), then its open loops
    at ``offered`` rounds/s (the saturation of the server run first: the same arrivals
    for both, so the two request p99s compare at one load; None: its own, when it runs
    first). Returns its closed loop and its open loops' p99s by record field."""
    p99s: dict[str, float] = {}
    with fresh_store(store) as url:
        data = Path(tmp) / f"base-w{w}r{run}"
        where = (url, data, args.checkpoint_interval, w, args.baseline_root)
        with server(*where) as (base, pid):
            old = asyncio.run(closed_loop(base, pid, "c", args.clients, args.seconds))
            order = "run second" if offered is not None else "run first"
            report(f"run {run + 1}, workers {w}, baseline server ({order}), closed", old)
            heading = f"run {run + 1}, workers {w}, baseline server, open"
            of = "this server's saturation" if offered is not None else "saturation"
            rate = old.rate if offered is None else offered
            for fraction, opened in open_loops(args, base, pid, run, rate, heading, of):
                results[(w, f"baseline open {fraction:.0%}")].append(opened)
                tag = f"baseline_open_{round(fraction * 100)}"
                p99s[tag + "_p99_ms"] = round(pct(opened.requests(), 0.99), 2)
    results[(w, "baseline closed")].append(old)
    return old, p99s


def bench_game(args: argparse.Namespace, game: str, store: str, workers: list[int]) -> None:
    interval = args.checkpoint_interval
    results: dict[tuple[int, str], list[Run]] = defaultdict(list)
    ratios: dict[int, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.repeats):
            records: list[tuple[Record, int, Run, dict[str, float]]] = []
            for w in workers:
                # The two servers take turns going first (odd runs: the baseline): the
                # one run second had the lower p99 at 75 % in five of six pairs on
                # 2026-12-05, whichever tree it was.
                first: tuple[Run, dict[str, float]] | None = None
                if args.baseline_root is not None and run % 2:
                    first = baseline_run(args, store, tmp, run, w, results, None)
                with fresh_store(store) as url:
                    data = Path(tmp) / f"w{w}r{run}"
                    name = f"{game} {store} workers={w} closed {args.clients}"
                    record = Record("bench_http", f"{name} {args.label}".strip())
                    with server(url, data, interval, w) as (base, pid):
                        closed = asyncio.run(
                            closed_loop(base, pid, "c", args.clients, args.seconds)
                        )
                        extra: dict[str, float] = {}
                        records.append((record, w, closed, extra))
                        phase = f"closed {args.clients}"
                        report(f"run {run + 1}, workers {w}, {phase} clients", closed)
                        results[(w, phase)].append(closed)
                        heading = f"run {run + 1}, workers {w}, open"
                        offered, of = closed.rate, "saturation"
                        if first is not None:  # the same arrivals as the baseline's
                            offered, of = first[0].rate, "the baseline server's saturation"
                        for fraction, opened in open_loops(
                            args, base, pid, run, offered, heading, of
                        ):
                            phase = f"open {fraction:.0%}"
                            results[(w, phase)].append(opened)
                            tag = f"open_{round(fraction * 100)}"
                            extra[tag + "_rounds_per_s"] = round(opened.rate, 1)
                            extra[tag + "_p99_ms"] = round(pct(opened.requests(), 0.99), 2)
                            for k, v in opened.gc.items():
                                extra[f"{tag}_gc_{k}"] = v
                        if args.solo:
                            alone = asyncio.run(solo(base, pid, "s", args.solo))
                            report(f"run {run + 1}, workers {w}, 1 client", alone)
                            results[(w, "solo")].append(alone)
                if args.baseline_root is not None:
                    if first is None:
                        first_ran = 0.0
                        old, p99s = baseline_run(args, store, tmp, run, w, results, closed.rate)
                    else:
                        first_ran = 1.0
                        old, p99s = first
                    extra.update(p99s)
                    cpu_now = closed.cpu["server"] / closed.rounds
                    cpu_old = old.cpu["server"] / old.rounds
                    print(
                        f"  run {run + 1}, workers {w}: this / baseline server:"
                        f" rounds/s {closed.rate / old.rate:.2f},"
                        f" server CPU per round {cpu_now / cpu_old:.2f}"
                    )
                    extra["baseline_server_rounds_per_s"] = round(old.rate, 1)
                    extra["baseline_server_cpu_ms_per_round"] = round(cpu_old * 1000, 3)
                    extra["cpu_per_round_over_baseline_server"] = round(cpu_now / cpu_old, 3)
                    extra["baseline_ran_first"] = first_ran
            local: Run | None = None
            if args.in_process:
                with fresh_store(store) as url:
                    settings = Settings(database_url=url, data_dir=Path(tmp) / f"inproc{run}")
                    app = bootstrap(settings)
                    app.sealer.start(interval)
                    try:
                        local = run_in_process(app, "c", args.clients, args.seconds)
                    finally:
                        app.close()
                report(f"run {run + 1}, in-process, {args.clients} threads", local)
                results[(0, "in-process")].append(local)
                for w in workers:
                    http = results[(w, f"closed {args.clients}")][-1]
                    ratios[w].append(http.rate / local.rate)
                    print(
                        f"  run {run + 1}: HTTP workers {w} / in-process rounds/s:"
                        f" {http.rate / local.rate:.2f}"
                    )
            if not args.no_record:
                for record, _w, closed, extra in records:
                    baseline: dict[str, Any] | None = None
                    if local is not None:
                        baseline = {
                            "in_process": figures(local),
                            "http_over_in_process": round(closed.rate / local.rate, 3),
                        }
                    record.done({**figures(closed), **extra}, baseline, quiet=True)
    summary(results, workers)
    if args.in_process:
        rates = [r.rate for r in results[(0, "in-process")]]
        print(f"  in-process {args.clients} threads: {spread(rates)} rounds/s")
        cpu = [r.cpu["process"] / r.rounds * 1000 for r in results[(0, "in-process")]]
        print(f"  in-process CPU per round: {spread(cpu, ' ms', 2)}")
        for w in workers:
            print(f"  HTTP workers {w} / in-process rounds/s: {spread(ratios[w], '', 2)}")


if __name__ == "__main__":
    sys.exit(main())
