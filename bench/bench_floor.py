"""Benchmark: the floor under a Red Dog round's server CPU on this machine, beside croupier.

Issue 27 asks for a Red Dog round over HTTP on SQLite at 1.0 ms of server CPU. This
measures, in one run, what a round costs at the least on this machine and in this
language, part by part, and croupier's own figure beside it:

1. **croupier over HTTP**: ``croupier serve`` (one worker, SQLite) under ``bench_http``'s
   closed loop of Red Dog rounds (``--clients`` keep-alive connections, a bet of 1,000 and
   see when the round stays open): server CPU a round and requests a round.
2. **bare HTTP server**: uvicorn as ``croupier serve`` runs it (httptools, uvloop, access
   log off) serving ``bench/floor_app.py`` (reads the body, answers fixed JSON bytes of a
   Red Dog answer's size; nothing else), under the same client and connections: server
   CPU a request, times croupier's requests a round.
3. **the log's guarantees, alone**: croupier's own Red Dog rounds in this process count
   the events a round stores; then, with those stored rows as the payloads, this process
   times per round what no implementation of the log can skip: one Ed25519 signature and
   two SHA-256 hashes an event (the chain and the Merkle leaf), one orjson encoding an
   event, the seed's AES-GCM seal, and the rows' insert into a SQLite table of the
   library's shape (WAL, ``synchronous=FULL`` as croupier's store) committed once a round
   and once per 32 rounds (a group commit's batch). CPU only (``time.process_time``): the
   wait for the disk's flush costs no CPU.

The floor is (2) + (3): an HTTP server that does nothing, and a log that does only what
it must. It is not a design; anything real (game rules, the session's money, idempotency,
authentication, validation, views, checkpoints) is on top. Prints each part's median and
spread over ``--repeats`` runs and records each run (``bench/record.py``).

    python bench/bench_floor.py [--repeats 3] [--seconds 8] [--clients 50]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_http  # noqa: E402
import record  # noqa: E402

from ledger import envelope  # noqa: E402
from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402

GOAL_MS = 1.0


def croupier_http(clients: int, seconds: float) -> dict[str, float]:
    """Server CPU a Red Dog round, and requests a round, over HTTP (bench_http's loop)."""
    bench_http.GAME = "red-dog"
    with (
        tempfile.TemporaryDirectory() as tmp,
        bench_http.server(None, Path(tmp) / "data", 1.0, 1) as (base, pid),
    ):
        run = asyncio.run(bench_http.closed_loop(base, pid, "f", clients, seconds))
    requests = len(run.requests())
    return {
        "rounds_per_s": run.rounds / run.wall,
        "cpu_ms_per_round": run.cpu["server"] / run.rounds * 1000,
        "requests_per_round": requests / run.rounds,
    }


def bare_http(clients: int, seconds: float) -> dict[str, float]:
    """Server CPU a request of uvicorn serving ``floor_app`` (no application at all)."""
    port = bench_http.free_port()
    cmd = [sys.executable, "-m", "uvicorn", "floor_app:app", "--app-dir", str(ROOT / "bench")]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--http", "httptools"]
    cmd += ["--loop", "uvloop", "--no-access-log", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if bench_http.httpx.post(f"{base}/", timeout=1).status_code == 200:
                    break
            except bench_http.httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.1)
        return asyncio.run(_hammer(base, proc.pid, clients, seconds))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _hammer(base: str, pid: int, clients: int, seconds: float) -> dict[str, float]:
    # A game request's headers: a session token and an idempotency key; a bet's body.
    headers = (
        b"Authorization: Bearer " + os.urandom(48).hex().encode() + b"\r\n"
        b"Idempotency-Key: " + str(uuid.uuid4()).encode() + b"\r\n"
    )
    body = b'{"bet":1000}'
    done = 0
    async with AsyncExitStack() as stack:
        conns = [bench_http.Connection(base) for _ in range(clients)]
        for c in conns:
            stack.push_async_callback(c.close)
            await c.request("/v1/sessions/s/red-dog/bet", headers, body)
        deadline = time.perf_counter() + seconds

        async def loop(c: bench_http.Connection) -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                status, _ = await c.request("/v1/sessions/s/red-dog/bet", headers, body)
                assert status == 200
                done += 1

        cpu = bench_http.tree_cpu(pid)
        start = time.perf_counter()
        await asyncio.gather(*(loop(c) for c in conns))
        wall = time.perf_counter() - start
        cpu = bench_http.tree_cpu(pid) - cpu
    return {"requests_per_s": done / wall, "cpu_ms_per_request": cpu / done * 1000}


def stored_rounds(rounds: int) -> tuple[float, list[bytes], float]:
    """Events a Red Dog round stores, the stored rows of those rounds (their bytes), and
    croupier's own CPU a round in this thread (one session, no HTTP: a batch of one)."""
    with tempfile.TemporaryDirectory() as tmp:
        app = bootstrap(Settings(data_dir=Path(tmp) / "data"))
        try:
            app.open_account("floor-open", "floor", "EUR")
            app.deposit("floor-deposit", "floor", 10**9)
            sid = app.open_session("floor-session", "floor", 10**9).session_id
            first = app.recorder.max_notification_id() or 0
            cpu = time.process_time()
            for i in range(rounds):
                r = app.red_dog_bet(f"floor-{i}-b", sid, 1000)
                if r.status == "open":
                    app.red_dog_see(f"floor-{i}-s", sid)
            cpu = time.process_time() - cpu
            last = app.recorder.max_notification_id() or 0
            notes = app.recorder.select_notifications(first + 1, last - first)
            states = [bytes(n.state) for n in notes]
        finally:
            app.close()
    return (last - first) / rounds, states, cpu / rounds * 1000


def guarantees(events_per_round: float, states: list[bytes], rounds: int) -> dict[str, float]:
    """CPU a round of what the log must do for ``events_per_round`` events: µs."""
    key = Ed25519PrivateKey.generate()
    aead = AESGCM(AESGCM.generate_key(bit_length=256))
    payloads = [envelope.decode(s).payload for s in states]  # the events' JSON bytes
    values = [orjson.loads(p) for p in payloads]
    n = len(states)

    def per_round(fn: Callable[[bytes], object]) -> float:
        t = time.process_time()
        for s in states:
            fn(s)
        return (time.process_time() - t) / n * events_per_round * 1e6

    out = {
        "sign_us": per_round(key.sign),  # the envelope signs about the stored bytes
        "hash_us": per_round(lambda s: hashlib.sha256(hashlib.sha256(s).digest() + s).digest()),
    }
    t = time.process_time()
    for v in values:
        orjson.dumps(v)
    out["encode_us"] = (time.process_time() - t) / n * events_per_round * 1e6
    t = time.process_time()
    for _ in range(rounds):
        aead.encrypt(os.urandom(12), os.urandom(32), b"seed")
    out["seed_seal_us"] = (time.process_time() - t) / rounds * 1e6
    per = max(1, round(events_per_round))
    for batch in (1, 32):
        out[f"sqlite_batch{batch}_us"] = _sqlite(states, per, batch, rounds)
    return out


def _sqlite(states: list[bytes], per_round: int, batch: int, rounds: int) -> float:
    """CPU a round of inserting ``per_round`` rows and committing every ``batch`` rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "floor.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER,"
            " topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
        )
        rows = [
            (str(uuid.uuid4()), 1, "croupier/round/settled@1", states[i % len(states)])
            for i in range(rounds * per_round)
        ]
        t = time.process_time()
        for start in range(0, rounds, batch):
            db.execute("BEGIN")
            lo, hi = start * per_round, min(rounds, start + batch) * per_round
            db.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows[lo:hi])
            db.execute("COMMIT")
        cpu = time.process_time() - t
        db.close()
    return cpu / rounds * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--rounds", type=int, default=400, help="rounds of the in-process part")
    args = p.parse_args()
    runs: list[dict[str, float]] = []
    for i in range(args.repeats):
        rec = record.Run("bench_floor", "red-dog sqlite")
        crou = croupier_http(args.clients, args.seconds)
        bare = bare_http(args.clients, args.seconds)
        events, states, inproc = stored_rounds(args.rounds)
        g = guarantees(events, states, args.rounds)
        reqs = crou["requests_per_round"]
        http_ms = bare["cpu_ms_per_request"] * reqs
        log_ms = (g["sign_us"] + g["hash_us"] + g["encode_us"] + g["seed_seal_us"]) / 1000
        figures = {
            "croupier_http_cpu_ms_per_round": crou["cpu_ms_per_round"],
            "croupier_http_rounds_per_s": crou["rounds_per_s"],
            "requests_per_round": reqs,
            "croupier_in_process_one_session_cpu_ms_per_round": inproc,
            "bare_http_cpu_ms_per_request": bare["cpu_ms_per_request"],
            "bare_http_requests_per_s": bare["requests_per_s"],
            "bare_http_cpu_ms_per_round": http_ms,
            "events_per_round": events,
            **g,
            "floor_ms_per_round_batch1": http_ms + log_ms + g["sqlite_batch1_us"] / 1000,
            "floor_ms_per_round_batch32": http_ms + log_ms + g["sqlite_batch32_us"] / 1000,
        }
        figures = {k: round(v, 4) for k, v in figures.items()}
        runs.append(figures)
        print(f"run {i + 1}: " + ", ".join(f"{k} {v}" for k, v in figures.items()), flush=True)
        rec.done(figures, quiet=True)
    print(f"\nmedian and spread of {len(runs)} runs ({os.cpu_count()} cores):")
    for key in runs[0]:
        print(f"  {key:52s} {bench_http.spread([r[key] for r in runs], digits=3)}")
    floor = statistics.median(r["floor_ms_per_round_batch32"] for r in runs)
    now = statistics.median(r["croupier_http_cpu_ms_per_round"] for r in runs)
    print(
        f"\nfloor (bare server + the log's guarantees, batches of 32) {floor:.3f} ms a round;"
        f" goal {GOAL_MS} ms; croupier {now:.3f} ms: {now / floor:.1f} x the floor"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
