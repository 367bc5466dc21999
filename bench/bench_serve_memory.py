"""Benchmark: resident memory of a real ``croupier serve`` over a long run over HTTP.

Starts ``croupier serve`` (its own process; PostgreSQL on a fresh schema, or SQLite in a
temporary directory) and plays Jacks or Better 4-line rounds (deal, draw the proposed
holds, collect a pending win) from ``--clients`` concurrent HTTP clients round-robin
over ``--sessions`` sessions, so every round leaves a new aggregate for the caches; every
``--history-every`` rounds it also reads one player's account history and one session's
last games (the read models, which must not grow with the log). Every ``--every`` rounds
it prints the RSS of the serve process (with its workers' RSS when ``--workers`` > 1),
then the ratio of each figure to the one at ``--base`` rounds (the caches are full by
then: 8,192 aggregates at the default 64 MiB budget).

The load generator is ``bench_http``'s keep-alive HTTP/1.1 client (``--client raw``, one
connection per client coroutine, its players taking turns on it), cheap enough that the
server sets the pace; ``--client httpx`` keeps one httpx client and connection per
player. At the end it prints the slope after ``--base`` (MiB per 1,000 rounds).

    python bench/bench_serve_memory.py [--rounds 100000] [--every 10000] [--base 20000]
        [--clients 16] [--sessions 500] [--workers 1] [--store postgres|sqlite]
        [--client raw|httpx]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_http  # the benchmark's own directory, set up above
from bench_http import (
    OPERATOR,
    Connection,
    HttpPlayer,
    Latencies,
    auth,
    fresh_schema,
    players,
    server,
)


def rss_mib(pid: int) -> float:
    """VmRSS of a process and of its children (uvicorn's workers), MiB."""
    total = 0.0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for p in [pid, *map(int, children)]:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total


@contextmanager
def store(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield ""
        return
    with fresh_schema() as url:
        yield url


async def run(args: argparse.Namespace, base: str, pid: int) -> list[tuple[int, float]]:
    marks: list[tuple[int, float]] = []
    async with AsyncExitStack() as stack:
        op = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=120))
        made: list[HttpPlayer]
        if args.client == "raw":
            # A few connections, each shared in turn by its client's players (one request
            # at a time on each), so 500 sessions need no 500 sockets.
            conns = [Connection(base) for _ in range(args.clients)]
            for conn in conns:
                stack.push_async_callback(conn.close)
            made = [HttpPlayer(conns[k % args.clients], f"m{k}") for k in range(args.sessions)]

            async def setup(k: int) -> None:
                for p in made[k :: args.clients]:
                    await p.open()
                    await p.play_round({"deal": [], "draw": [], "collect": []})  # warm-up

            await asyncio.gather(*(setup(k) for k in range(args.clients)))
        else:
            bench_http.CLIENT = "httpx"  # one httpx client and connection per player
            made = await players(stack, base, "m", args.sessions)
        rng = random.Random(1)
        done = 0
        next_mark = args.every
        start = time.perf_counter()
        marks.append((0, rss_mib(pid)))
        print(f"after {0:>7,} rounds: RSS {marks[0][1]:7.1f} MiB (sessions open)", flush=True)
        lat: Latencies = {"deal": [], "draw": [], "collect": []}

        async def client(k: int) -> None:
            nonlocal done, next_mark
            mine = made[k :: args.clients]
            n = 0
            while done < args.rounds:
                player = mine[n % len(mine)]
                await player.play_round(lat)
                n += 1
                done += 1
                for values in lat.values():
                    values.clear()  # latencies are not what this measures: keep nothing
                if done % args.history_every == 0:
                    p = rng.choice(made)
                    h = await op.get(f"/v1/accounts/{p.name}/history", headers=auth(OPERATOR))
                    h.raise_for_status()
                    g = await op.get(f"/v1/sessions/{p.sid}/history", headers=auth(p.token))
                    g.raise_for_status()
                if done >= next_mark:
                    next_mark += args.every
                    rss = rss_mib(pid)
                    marks.append((done, rss))
                    rate = done / (time.perf_counter() - start)
                    print(
                        f"after {done:>7,} rounds: RSS {rss:7.1f} MiB; {rate:.0f} rounds/s;"
                        f" load average {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )

        await asyncio.gather(*(client(k) for k in range(args.clients)))
    return marks


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=100_000)
    p.add_argument("--every", type=int, default=10_000)
    p.add_argument("--base", type=int, default=20_000)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--sessions", type=int, default=500)
    p.add_argument("--history-every", type=int, default=1000)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="raw: hand-written keep-alive HTTP/1.1, one connection per client (cheap);"
        " httpx: one httpx client and connection per player (as bench_http)",
    )
    args = p.parse_args()
    budget = os.environ.get("CROUPIER_CACHE_BUDGET_MB", "64 (default)")
    print(
        f"croupier serve --workers {args.workers} on {args.store}, cache budget {budget} MiB;"
        f" {args.clients} HTTP clients over {args.sessions} sessions, {args.rounds:,} JB"
        f" 4-line rounds; load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        store(args.store, Path(tmp)) as url,
        server(url, Path(tmp) / "serve", 1.0, args.workers) as (base, pid),
    ):
        marks = asyncio.run(run(args, base, pid))
    at_base = [rss for n, rss in marks if n >= args.base]
    if at_base:
        ref = at_base[0]
        for n, rss in marks:
            if n >= args.base:
                print(f"RSS after {n:>7,} rounds / after {args.base:,}: {rss / ref:.3f}")
    after = [(n, rss) for n, rss in marks if n >= args.base]
    if len(after) > 1:
        (n0, r0), (n1, r1) = after[0], after[-1]
        slope = (r1 - r0) / (n1 - n0) * 1000
        print(f"slope after {n0:,} rounds: {slope:+.2f} MiB per 1,000 rounds (to {n1:,})")
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
