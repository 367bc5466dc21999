"""Benchmark: which calls on a command's path hand the GIL away, and what that costs.

A call that releases the GIL (a system call, a C library that says so) lets another
thread of the process run Python. If one is ready, the caller gets the GIL back only when
that thread blocks or has run for the interpreter's switch interval (5 ms): a 1 us call
can cost a 5 ms wait. In ``croupier serve`` the group-commit writer and the table's runner
share the GIL with the event loop, so each such call on their path is a possible wait for
every command of their batch.

For each call this prints how many it makes in ``--seconds`` alone, then beside a thread
running pure Python, and the mean time a call took beside it. A call that keeps the GIL
runs about half as often beside the busy thread (they share one interpreter); one that
hands the GIL away runs hundreds of times less often.

    python bench/bench_gil.py [--seconds 0.5] [--no-record]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.record import Run  # noqa: E402  # after the path set-up above
from ledger import entropy  # noqa: E402


def calls(db: sqlite3.Connection) -> dict[str, Callable[[], object]]:
    key = Ed25519PrivateKey.generate()
    message = b"m" * 120
    signature = key.sign(message)
    public = key.public_key()
    aead = AESGCM(os.urandom(32))
    small, large = b"s" * 200, b"l" * 4096
    return {
        "ed25519_sign": lambda: key.sign(message),
        "ed25519_verify": lambda: public.verify(signature, message),
        "os_urandom_32": lambda: os.urandom(32),
        "entropy_token_bytes_32": lambda: entropy.token_bytes(32),
        "aes_gcm_seal_32": lambda: aead.encrypt(b"n" * 12, b"s" * 32, b"ad"),
        "sha256_200_bytes": lambda: hashlib.sha256(small).digest(),
        "sha256_4096_bytes": lambda: hashlib.sha256(large).digest(),
        "sqlite_select_1": lambda: db.execute("SELECT 1").fetchall(),
    }


def count(call: Callable[[], object], seconds: float) -> int:
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        call()
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=0.5, help="per call and side")
    ap.add_argument("--no-record", action="store_true", help="do not append to bench/results")
    args = ap.parse_args()
    run = Run("bench_gil", "calls beside a busy thread")
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "gil.db", check_same_thread=False)
        table = calls(db)
        alone = {name: count(call, args.seconds) for name, call in table.items()}
        stop = threading.Event()

        def busy() -> None:
            x = 0
            while not stop.is_set():
                x += 1

        thread = threading.Thread(target=busy, daemon=True)
        thread.start()
        try:
            beside = {name: count(call, args.seconds) for name, call in table.items()}
        finally:
            stop.set()
            thread.join()
        db.close()
    print(
        f"calls in {args.seconds} s; switch interval {sys.getswitchinterval() * 1e3:g} ms; "
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'call':26} {'alone':>9} {'beside':>9} {'ratio':>8} {'us a call beside':>17}")
    figures: dict[str, float] = {"switch_interval_ms": sys.getswitchinterval() * 1e3}
    for name in table:
        ratio = beside[name] / alone[name]
        us = args.seconds / max(beside[name], 1) * 1e6
        print(f"{name:26} {alone[name]:9d} {beside[name]:9d} {ratio:8.4f} {us:17.1f}")
        figures[f"{name}_alone"] = alone[name]
        figures[f"{name}_beside_busy"] = beside[name]
        figures[f"{name}_us_beside_busy"] = round(us, 2)
    if not args.no_record:
        run.done(figures, quiet=True)


if __name__ == "__main__":
    main()
