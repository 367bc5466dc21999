"""Benchmark: complete Jacks or Better 4-line rounds over HTTP vs in-process, on PostgreSQL.

One run, two fresh PostgreSQL schemas:

1. HTTP: ``croupier serve`` runs in its own process (uvicorn, loopback only, access log
   off); this process is the load generator: N concurrent clients (httpx async, one
   session each, no think time) play complete rounds: deal (coin value 10, 5 coins,
   4 lines), draw with the game's proposed holds, collect if a win is pending. Every
   request is timed.
2. In-process: the same rounds with the same number of concurrent players (threads),
   calling the ``Casino`` application directly (``vp_deal`` / ``vp_act``), so the
   difference is the HTTP layer (FastAPI, uvicorn, JSON, loopback TCP, a second process).

Each mode starts its checkpoint timer with the same interval, warms up with one round
per client, then plays ``--rounds`` rounds per client (at most ``--timeout`` seconds),
then one client alone plays ``--solo`` rounds (latency without queueing). Prints rounds/s,
p50/p99 latency per request kind, CPU time per round (server and load generator for
HTTP), and the ratio of the two rates.

With N clients and no think time, latency is mostly queueing: by Little's law the mean
is about N / (requests per second), in both modes. The machine (2 cores here) runs the
server, the load generator and PostgreSQL at once, and other work shares it: figures
are noisy.

    python bench/bench_http.py [--clients 50] [--rounds 20] [--solo 30] [--timeout 120]
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ledger.casino import Casino  # noqa: E402  # after the path set-up above
from ledger.settings import Settings  # noqa: E402

PG_URL = os.environ.get("CROUPIER_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
VARIANT, COIN_VALUE, COINS, LINES = "jb-4line", 10, 5, 4
DEAL = {"variant": VARIANT, "coin_value": COIN_VALUE, "coins": COINS, "lines": LINES}
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

    @property
    def rate(self) -> float:
        return self.rounds / self.wall


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


# -- HTTP ------------------------------------------------------------------------------------


@contextmanager
def server(database_url: str, data_dir: Path, interval: float) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {
        **os.environ,
        "CROUPIER_DATABASE_URL": database_url,
        "CROUPIER_DATA_DIR": str(data_dir),
        "CROUPIER_OPERATOR_TOKEN": OPERATOR,
        "CROUPIER_AUDITOR_TOKEN": AUDITOR,
        "CROUPIER_CHECKPOINT_INTERVAL_SECONDS": str(interval),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, "-m", "api.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", "warning", "--no-access-log"]
    log = (data_dir.parent / "serve.log").open("w")
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("croupier serve did not start")
            time.sleep(0.2)
        # The catalogue (exact video poker RTP) is computed in the background at start-up;
        # let it finish so it does not share the CPU with the measured run.
        httpx.get(f"{base}/v1/games", headers=auth(OPERATOR), timeout=60).raise_for_status()
        yield base, proc.pid
    finally:
        proc.terminate()  # graceful: the app closes the Casino and seals a last checkpoint
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        errors = (data_dir.parent / "serve.log").read_text().strip()
        if errors:
            print(f"croupier serve said:\n{errors}", file=sys.stderr)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class HttpPlayer:
    def __init__(self, client: httpx.AsyncClient, name: str) -> None:
        self.client = client
        self.name = name
        self.sid = ""
        self.token = ""
        self.requests = 0
        self.retries = 0

    async def post(self, path: str, token: str, body: Any, lat: Latencies, kind: str) -> Any:
        self.requests += 1
        headers = {**auth(token), "Idempotency-Key": f"{self.name}-{self.requests}"}
        t = time.perf_counter()
        for attempt in range(3):
            try:
                r = await self.client.post(path, json=body, headers=headers)
                break
            except httpx.TransportError:
                # What a game client does on a dropped connection: send it again with the
                # same Idempotency-Key (at most once on the ledger, whatever happened).
                self.retries += 1
                if attempt == 2:
                    raise
        lat[kind].append(time.perf_counter() - t)
        if r.status_code >= 300:
            raise RuntimeError(f"{kind}: {r.status_code} {r.text}")
        return r.json()

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
        base = f"/v1/sessions/{self.sid}/video-poker"
        r = await self.post(f"{base}/deal", self.token, DEAL, lat, "deal")
        holds = r["view"]["recommended"]
        r = await self.post(f"{base}/draw", self.token, {"holds": holds}, lat, "draw")
        if r["status"] == "open":  # a win is pending: take it
            r = await self.post(f"{base}/collect", self.token, None, lat, "collect")
        assert r["status"] == "settled", r


async def run_http(base: str, pid: int, tag: str, clients: int, rounds: int, timeout: float) -> Run:
    # One client (and connection) per player, as game clients are; idle connections expire
    # on the client before uvicorn's 5 s keep-alive closes them, so no request is sent on
    # a connection the server is closing.
    limits = httpx.Limits(max_connections=1, keepalive_expiry=2.0)
    async with AsyncExitStack() as stack:
        players = [
            HttpPlayer(
                await stack.enter_async_context(
                    httpx.AsyncClient(base_url=base, limits=limits, timeout=120)
                ),
                f"{tag}{n}",
            )
            for n in range(clients)
        ]
        await asyncio.gather(*(p.open() for p in players))
        await asyncio.gather(*(p.play_round(defaultdict(list)) for p in players))  # warm-up

        lat: Latencies = defaultdict(list)
        done = 0
        deadline = time.perf_counter() + timeout

        async def play(p: HttpPlayer) -> None:
            nonlocal done
            for _ in range(rounds):
                if time.perf_counter() > deadline:
                    return
                await p.play_round(lat)
                done += 1

        server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(play(p) for p in players))
        wall = time.perf_counter() - start
        cpu = {
            "server": cpu_seconds(pid) - server_cpu,
            "load generator": time.process_time() - client_cpu,
        }
        return Run(wall, done, lat, cpu, sum(p.retries for p in players))


# -- in-process ------------------------------------------------------------------------------


def run_in_process(app: Casino, tag: str, clients: int, rounds: int, timeout: float) -> Run:
    lock = threading.Lock()

    def timed(lat: Latencies, kind: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        t = time.perf_counter()
        r = call()
        elapsed = time.perf_counter() - t
        with lock:
            lat[kind].append(elapsed)
        return r

    def play_round(sid: str, rid: str, lat: Latencies) -> None:
        r = timed(
            lat, "deal", lambda: app.vp_deal(f"{rid}-d", sid, VARIANT, COIN_VALUE, COINS, LINES)
        )
        holds = r["view"]["recommended"]
        r = timed(lat, "draw", lambda: app.vp_act(f"{rid}-h", sid, ["draw", holds]))
        if r["status"] == "open":
            r = timed(lat, "collect", lambda: app.vp_act(f"{rid}-c", sid, ["collect"]))
        assert r["status"] == "settled", r

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
        sessions.append(app.open_session(f"{player}-session", player, BUY_IN)["session_id"])
    in_threads(lambda n, sid: play_round(sid, f"{tag}{n}-warm", defaultdict(list)), sessions)

    lat: Latencies = defaultdict(list)
    counts = [0] * clients
    deadline = time.perf_counter() + timeout

    def play(n: int, sid: str) -> None:
        for i in range(rounds):
            if time.perf_counter() > deadline:
                return
            play_round(sid, f"{tag}{n}-{i}", lat)
            counts[n] += 1

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
    every = [v for values in run.lat.values() for v in values]
    print(
        f"{name}: {run.rounds} rounds in {run.wall:.2f} s = {run.rate:.1f} rounds/s,"
        f" {len(every)} requests"
    )
    for kind in ("deal", "draw", "collect", "all"):
        values = every if kind == "all" else run.lat.get(kind, [])
        if values:
            print(
                f"  {kind:8} n={len(values):5}  p50 {pct(values, 0.50):8.2f} ms"
                f"  p99 {pct(values, 0.99):8.2f} ms  mean {statistics.fmean(values) * 1000:8.2f} ms"
            )
    if run.rounds:
        cpu = ", ".join(f"{k} {v / run.rounds * 1000:.1f} ms" for k, v in run.cpu.items())
        print(f"  CPU per round: {cpu}")
    if run.retries:
        print(f"  requests re-sent after a transport error: {run.retries}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--rounds", type=int, default=20, help="rounds per client (default 20)")
    p.add_argument("--solo", type=int, default=30, help="rounds of the lone client (default 30)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per run at most")
    p.add_argument("--checkpoint-interval", type=float, default=5.0)
    args = p.parse_args()
    print(
        f"Jacks or Better 4-line rounds (deal {DEAL['coin_value']}x{DEAL['coins']}x"
        f"{DEAL['lines']}, draw the proposed holds, collect a pending win); "
        f"{args.clients} concurrent clients x {args.rounds} rounds, then 1 client x "
        f"{args.solo} rounds; PostgreSQL; {os.cpu_count()} cores; "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    interval = args.checkpoint_interval
    with tempfile.TemporaryDirectory() as tmp:
        with fresh_schema() as url, server(url, Path(tmp) / "http", interval) as (base, pid):
            http = asyncio.run(run_http(base, pid, "c", args.clients, args.rounds, args.timeout))
            http_solo = asyncio.run(run_http(base, pid, "s", 1, args.solo, args.timeout))
        report(f"HTTP, {args.clients} clients (croupier serve in its own process)", http)
        report("HTTP, 1 client", http_solo)

        with fresh_schema() as url:
            app = Casino(Settings(database_url=url, data_dir=Path(tmp) / "inproc"))
            app.sealer.start(interval)
            try:
                local = run_in_process(app, "c", args.clients, args.rounds, args.timeout)
                local_solo = run_in_process(app, "s", 1, args.solo, args.timeout)
            finally:
                app.close()
        report(f"in-process, {args.clients} threads (Casino called directly)", local)
        report("in-process, 1 thread", local_solo)

    print(
        f"ratio HTTP / in-process: {http.rate / local.rate:.2f} with {args.clients} clients,"
        f" {http_solo.rate / local_solo.rate:.2f} with 1 client;"
        f" load average {os.getloadavg()[0]:.2f} at end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
