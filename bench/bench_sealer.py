"""Benchmark: the cost of checkpointing every second under ``croupier serve``.

Runs the same stream of commands (deposits, one transaction each, SQLite, fsynced) with
the sealer's timer off and with it at 1 s, alternating, and prints commands/s of each and
their ratio; the timer's checkpoints are counted.

    python bench/bench_sealer.py [commands per run] [repeats]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings


def run(n: int, interval: float | None) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as d:
        app = Casino(Settings(data_dir=Path(d), checkpoint_every=10**9), keyring=Keyring.generate())
        app.open_account("o", "bench", "EUR")
        if interval is not None:
            app.sealer.start(interval)
        t0 = time.perf_counter()
        for i in range(n):
            app.deposit(f"d{i}", "bench", 1)
        rate = n / (time.perf_counter() - t0)
        app.sealer.stop()
        latest = app.sealer.latest()
        app.close()
        return rate, latest.seq if latest else 0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    off, on, sealed = [], [], []
    for _ in range(repeats):
        off.append(run(n, None)[0])
        rate, seq = run(n, 1.0)
        on.append(rate)
        sealed.append(seq)
    print(
        f"timer off: {statistics.mean(off):,.0f} commands/s (runs: "
        + ", ".join(f"{r:,.0f}" for r in off)
        + ")"
    )
    print(
        f"timer 1 s: {statistics.mean(on):,.0f} commands/s (runs: "
        + ", ".join(f"{r:,.0f}" for r in on)
        + f"); checkpoints written per run: {sealed}"
    )
    print(
        f"ratio 1 s / off: {statistics.mean(on) / statistics.mean(off):.2f} "
        f"(per pair: " + ", ".join(f"{b / a:.2f}" for a, b in zip(off, on, strict=True)) + ")"
    )


if __name__ == "__main__":
    main()
