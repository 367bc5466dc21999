"""Benchmark: seamless-wallet calls per second against the reference wallet, 0 and 20 ms
added latency, N concurrent callers sharing one ``WalletClient``.

``croupier wallet-sim`` runs in its own process (uvicorn, loopback, access log off, a
fresh SQLite file); this process is the load generator: N threads (as croupier's API
worker threads would be), each playing debit + credit pairs for distinct rounds with no
think time, through one client (pool of N connections). Added latency is set through the
simulator's admin call between runs. Each setting is repeated; the spread is printed.

Latency overlaps across callers when calls/s ≈ N / (latency + service time) rather than
1 / latency. The machine (2 cores here) runs the wallet, the load generator and other
helpers' work at once: figures are noisy.

    python bench/bench_wallet.py [--callers 50] [--seconds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wallet.client import DebitOutcome, Timeouts, WalletClient  # noqa: E402
from wallet.delivery import DeliveryState  # noqa: E402
from wallet.protocol import Transaction  # noqa: E402
from wallet.sim.admin import SimAdmin  # noqa: E402
from wallet.sim.faults import FaultPlan  # noqa: E402
from wallet.sim.serve import free_port  # noqa: E402


def start_sim(directory: Path, key: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = dict(os.environ, WALLET_SIM_KEY=key, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "api.cli", "wallet-sim", "--port", str(port)]
    cmd += ["--db", str(directory / "wallet.sqlite"), "--log-level", "warning"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"wallet-sim did not start: {proc.communicate()[0]}")
        time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(client: WalletClient, callers: int, seconds: float, tag: str) -> tuple[float, list[float]]:
    """Calls per second over ``seconds`` and every call's latency (s)."""
    latencies: list[list[float]] = [[] for _ in range(callers)]
    stop = time.monotonic() + seconds
    failures: list[str] = []

    def caller(i: int) -> None:
        n = 0
        while time.monotonic() < stop:
            code = f"RD-{tag}-{i}-{n}"
            n += 1
            t0 = time.perf_counter()
            result = client.debit(Transaction.debit(f"p{i}", code, "main", 100, "EUR"))
            t1 = time.perf_counter()
            delivery = client.credit(Transaction.credit(f"p{i}", code, 100, "EUR"))
            t2 = time.perf_counter()
            if result.outcome is not DebitOutcome.ACCEPTED:
                failures.append(f"debit {result.cause}")
            if delivery.state is not DeliveryState.ACKNOWLEDGED:
                failures.append(f"credit {delivery.last.cause}")
            latencies[i] += [t1 - t0, t2 - t1]

    started = time.perf_counter()
    threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} failed calls, e.g. {failures[0]}")
    flat = [x for per in latencies for x in per]
    return len(flat) / elapsed, flat


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--callers", type=int, default=50)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    key = secrets.token_hex(32)
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_sim(Path(tmp), key)
        admin = SimAdmin(base, key.encode())
        client = WalletClient(
            base,
            key.encode(),
            timeouts=Timeouts(connect=5, read=10, write=5, pool=10),
            max_connections=args.callers,
        )
        try:
            for i in range(args.callers):
                admin.set_player(f"p{i}", "EUR", 10**12)
            print(
                f"wallet-sim at {base}; {args.callers} callers, {args.seconds:g} s x {args.repeats}"
            )
            print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()}")
            for latency in (0, 20):
                admin.set_faults(FaultPlan(latency_ms=latency))
                run(client, args.callers, 1.0, f"warm{latency}")
                rates, all_latencies = [], []
                cpu0, sim0 = time.process_time(), cpu_seconds(proc.pid)
                for r in range(args.repeats):
                    rate, lat = run(client, args.callers, args.seconds, f"{latency}-{r}")
                    rates.append(rate)
                    all_latencies += lat
                calls = len(all_latencies)
                own = (time.process_time() - cpu0) / calls * 1e3
                sim = (cpu_seconds(proc.pid) - sim0) / calls * 1e3
                q = statistics.quantiles(all_latencies, n=100)
                print(
                    f"added latency {latency:2d} ms: calls/s median {statistics.median(rates):7.1f}"
                    f" (runs {', '.join(f'{x:.1f}' for x in rates)}; spread {min(rates):.1f}-"
                    f"{max(rates):.1f}); per call p50 {q[49] * 1e3:.1f}, p99 {q[98] * 1e3:.1f} ms"
                )
                print(f"  CPU per call: client {own:.2f} ms, wallet-sim {sim:.2f} ms")
                if latency:
                    serial = 1000 / latency
                    print(
                        f"  serialised, one caller at {latency} ms could do at most {serial:.0f}"
                        f" calls/s; overlap factor {statistics.median(rates) / serial:.1f}"
                    )
            print(f"load average after: {os.getloadavg()}")
        finally:
            client.close()
            admin.close()
            proc.terminate()
            proc.communicate(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
