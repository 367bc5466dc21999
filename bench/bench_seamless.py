"""Benchmark: Red Dog rounds per second in seamless mode against the reference wallet
(``croupier wallet-sim`` in its own process), with 0 ms and 20 ms added wallet latency,
next to transfer mode in the same run.

N threads (as the API's worker threads would be), each with its own session, play Red Dog
rounds (bet, then see if the round stays open) with no think time against one in-process
Casino on SQLite (a fresh data directory per setting). In seamless mode every bet is an
intent, a debit at the wallet and an outcome (two commands around the wallet call), and
every win a credit delivered by the background outbox; the figure counts rounds whose
bet returned. Settings alternate within each repeat; the load average is printed with
each figure (the machine is shared).

    python bench/bench_seamless.py [--sessions 50] [--seconds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import secrets
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_wallet import start_sim  # noqa: E402

from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.casino import Casino  # noqa: E402
from ledger.seamless.commands import OpenSeamlessSession  # noqa: E402
from ledger.seamless.errors import WalletUnavailable  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from wallet.client import Timeouts, WalletClient  # noqa: E402
from wallet.sim.admin import SimAdmin  # noqa: E402
from wallet.sim.faults import FaultPlan  # noqa: E402

BET = 100


CPU: list[float] = []  # this process's CPU ms per round of each run (wallet-sim excluded)
EVENTS: list[float] = []  # signed events written per round of each run (outbox drained)


def stored_events(directory: Path) -> int:
    """Rows in the run's event table (SQLite, read-only)."""
    con = sqlite3.connect(f"file:{directory / 'casino.sqlite'}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0])
    finally:
        con.close()


def play(app: Casino, sessions: list[str], seconds: float) -> tuple[int, int]:
    """(rounds, refused) played by one thread per session within ``seconds``."""
    cpu0 = time.process_time()
    stop = time.monotonic() + seconds
    counts = [0] * len(sessions)
    refused = [0] * len(sessions)

    def worker(i: int, sid: str) -> None:
        n = 0
        while time.monotonic() < stop:
            n += 1
            try:
                r = app.red_dog_bet(f"b{n}", sid, BET)
            except WalletUnavailable:
                refused[i] += 1
                continue
            if r.status == "open":
                app.red_dog_see(f"s{n}", sid)
            counts[i] += 1

    threads = [threading.Thread(target=worker, args=(i, s)) for i, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    CPU.append((time.process_time() - cpu0) * 1000 / max(1, sum(counts)))
    return sum(counts), sum(refused)


def transfer(directory: Path, n: int, seconds: float) -> float:
    app = bootstrap(Settings(data_dir=directory))
    try:
        sessions = []
        for i in range(n):
            app.open_account(f"a{i}", f"t{i}", "EUR")
            app.deposit(f"d{i}", f"t{i}", 10**9)
            sessions.append(str(app.open_session(f"o{i}", f"t{i}", 10**8).session_id))
        before = stored_events(directory)
        rounds, _ = play(app, sessions, seconds)
        EVENTS.append((stored_events(directory) - before) / max(1, rounds))
        return rounds / seconds
    finally:
        app.close()


def seamless(
    directory: Path,
    n: int,
    seconds: float,
    base: str,
    key: str,
    admin: SimAdmin,
    pooled: bool = True,
) -> tuple[float, int, int]:
    client = WalletClient(
        base, key.encode(), timeouts=Timeouts(read=5.0), max_connections=100, pooled=pooled
    )
    app = bootstrap(Settings(data_dir=directory), wallets={"op": client})
    try:
        sessions = []
        for i in range(n):
            player = f"{directory.name}-p{i}"
            admin.set_player(player, "EUR", 10**9)
            doc = app.command(f"o{i}", OpenSeamlessSession("op", player, "EUR"))
            sessions.append(str(doc.session_id))
        app.seamless.start()
        before = stored_events(directory)
        rounds, refused = play(app, sessions, seconds)
        pending = app.seamless.outbox.catch_up()
        app.seamless.outbox.drain()  # the deliveries' records count as the round's events
        EVENTS.append((stored_events(directory) - before) / max(1, rounds))
        return rounds / seconds, refused, pending
    finally:
        app.close()
        client.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    key = secrets.token_hex(16)
    figures: dict[str, list[float]] = {"transfer": [], "seamless 0 ms": [], "seamless 20 ms": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc, base = start_sim(root, key)
        admin = SimAdmin(base, key.encode())
        try:
            for rep in range(args.repeats):
                for name in figures:
                    load = os.getloadavg()[0]
                    d = root / f"{rep}-{name.replace(' ', '-')}"
                    if name == "transfer":
                        rate, extra = transfer(d, args.sessions, args.seconds), ""
                    else:
                        admin.set_faults(FaultPlan(latency_ms=20 if "20" in name else 0))
                        rate, refused, pending = seamless(
                            d, args.sessions, args.seconds, base, key, admin
                        )
                        extra = f" (refused {refused}, outbox pending at the end {pending})"
                    figures[name].append(rate)
                    print(
                        f"repeat {rep + 1} {name:15} {rate:7.1f} rounds/s"
                        f"  CPU {CPU[-1]:.1f} ms/round  {EVENTS[-1]:.1f} events/round"
                        f"  load {load:.1f}{extra}",
                        flush=True,
                    )
        finally:
            admin.close()
            proc.terminate()
            proc.wait()
    print()
    base_rate = figures["transfer"]
    for name, rates in figures.items():
        med = statistics.median(rates)
        ratio = [r / t for r, t in zip(rates, base_rate, strict=True)]
        print(
            f"{name:15} median {med:7.1f} rounds/s  runs {', '.join(f'{r:.1f}' for r in rates)}"
            f"  x transfer (same repeat): {', '.join(f'{x:.2f}' for x in ratio)}"
        )
    print(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
