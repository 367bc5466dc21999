"""One session floods a live table with bet/undo; what it writes and what another player feels.

Issue 22's attack: one session cycling bet/undo at the default table made 353 requests/s
for 10 s with no 429 and wrote 10,647 log rows, and the other players' latency doubled.
This starts ``croupier serve`` (SQLite, default settings), opens two sessions and, for
each repeat:

- **idle**: the other player alone for ``--seconds``: every 0.05 s a read of its table
  state, and every second a chip (so rounds are dealt and settled in both phases); its
  latencies (p50, p99);
- **flood**: the same player while the attacker's ``--threads`` threads cycle bet/undo as
  fast as the server answers: the attacker's requests/s, its answers by status, the rows
  its session wrote (counted in the log), and the other player's p50/p99 with the ratio to
  the idle figure measured just before.

``--no-limits`` runs the same with the per-session rate and the chip cap lifted (today's
behaviour before the limits: the baseline of what they prevent). Figures recorded with
bench/record.py; run from the repository root:

    .venv/bin/python bench/bench_session_flood.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record import Run  # noqa: E402
from tests.integration.test_http_serve import launch  # noqa: E402

OPERATOR = "bench-flood-operator-token-0123456789"
TABLE = "ibj-1"
LIFTED = {"CROUPIER_SESSION_COMMANDS_PER_SECOND": "0", "CROUPIER_CHIP_MOVES_PER_ROUND": "1000000"}
DEFAULTS = {"CROUPIER_SESSION_COMMANDS_PER_SECOND": "10", "CROUPIER_CHIP_MOVES_PER_ROUND": "60"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Server:
    def __init__(self, data: Path, limits: dict[str, Any]) -> None:
        self.data = data
        self.base, _, self.proc = launch(data, CROUPIER_OPERATOR_TOKEN=OPERATOR, **limits)
        self.op = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=60
        )

    def post(self, path: str, body: Any) -> Any:
        r = self.op.post(path, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code in (200, 201), (path, r.status_code, r.text)
        return r.json()

    def session(self, player: str) -> tuple[str, str]:
        self.post("/v1/accounts", {"player_id": player, "currency": "EUR"})
        self.post(f"/v1/accounts/{player}/deposits", {"amount": 10_000_000})
        s = self.post("/v1/sessions", {"player_id": player, "buy_in": 5_000_000})
        return s["session_id"], s["token"]

    def rows_of(self, aggregate: str) -> int:
        db = sqlite3.connect(f"file:{self.data / 'casino.sqlite'}?mode=ro", uri=True)
        try:
            ids = (aggregate, uuid.UUID(aggregate).hex)
            (n,) = db.execute(
                "SELECT count(*) FROM stored_events WHERE originator_id IN (?, ?)", ids
            ).fetchone()
            return int(n)
        finally:
            db.close()

    def stop(self) -> None:
        self.op.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=60)


class Player:
    """A session's client: its own connection pool, each command a new Idempotency-Key."""

    def __init__(self, base: str, sid: str, token: str) -> None:
        self.sid = sid
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.seat = f"/v1/sessions/{sid}/tables/{TABLE}"

    def command(self, action: str) -> httpx.Response:
        body = {"bet": "main", "amount": 100} if action == "bets" else None
        key = {"Idempotency-Key": uuid.uuid4().hex}
        return self.http.post(f"{self.seat}/{action}", json=body, headers=key)

    def state(self) -> httpx.Response:
        return self.http.get(self.seat)


def other_player(player: Player, seconds: float) -> list[float]:
    """Latencies (ms) of a human-paced player: a table read every 0.05 s and a chip every
    second (so a round is dealt and settled in every phase, idle or not)."""
    latencies: list[float] = []
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        t0 = time.perf_counter()
        r = player.state() if n % 20 else player.command("bets")
        latencies.append((time.perf_counter() - t0) * 1000)
        assert r.status_code < 500, r.text
        time.sleep(0.05)
    return latencies


def flood(player: Player, seconds: float, threads: int) -> Counter[int]:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def loop() -> None:
        local: Counter[int] = Counter()
        with httpx.Client(base_url=str(player.http.base_url), headers=player.http.headers) as c:
            mine = Player.__new__(Player)
            mine.http, mine.seat, mine.sid = c, player.seat, player.sid
            i = 0
            while time.monotonic() < end:
                local[mine.command("bets" if i % 2 == 0 else "undo").status_code] += 1
                i += 1
        with lock:
            statuses.update(local)

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-limits", action="store_true", help="lift the session limits")
    args = parser.parse_args()
    limits = LIFTED if args.no_limits else DEFAULTS
    name = f"sqlite threads={args.threads} {'no limits' if args.no_limits else 'defaults'}"
    run = Run("bench_session_flood", name)
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
        server = Server(Path(tmp), limits)
        try:
            attacker = Player(server.base, *server.session("attacker"))
            other = Player(server.base, *server.session("other"))
            other_player(other, 2.0)  # warm up (catalogue, caches)
            idle_p50, idle_p99, flood_p50, flood_p99, rates, rows, refused = ([] for _ in range(7))
            answers: Counter[int] = Counter()
            for rep in range(args.repeats):
                idle = other_player(other, args.seconds)
                before = server.rows_of(attacker.sid)
                with ThreadPoolExecutor(1) as pool:
                    attack = pool.submit(flood, attacker, args.seconds, args.threads)
                    under = other_player(other, args.seconds)
                    statuses = attack.result()
                written = server.rows_of(attacker.sid) - before
                total = sum(statuses.values())
                idle_p50.append(pct(idle, 0.5))
                idle_p99.append(pct(idle, 0.99))
                flood_p50.append(pct(under, 0.5))
                flood_p99.append(pct(under, 0.99))
                rates.append(total / args.seconds)
                rows.append(written)
                refused.append(statuses.get(429, 0))
                answers.update(statuses)
                print(
                    f"repeat {rep + 1}: attacker {total / args.seconds:.0f} req/s "
                    f"{dict(statuses)}, its session wrote {written} rows; other player "
                    f"p50 {pct(idle, 0.5):.1f} -> {pct(under, 0.5):.1f} ms, "
                    f"p99 {pct(idle, 0.99):.1f} -> {pct(under, 0.99):.1f} ms "
                    f"(x{pct(under, 0.99) / pct(idle, 0.99):.2f})",
                    flush=True,
                )
        finally:
            server.stop()
    ratios = [f / i for f, i in zip(flood_p99, idle_p99, strict=True)]
    figures = {
        "attacker_requests_per_s": round(statistics.median(rates), 1),
        "attacker_429": int(statistics.median(refused)),
        "attacker_session_rows": int(statistics.median(rows)),
        "attacker_session_rows_max": max(rows),
        "other_p50_ms": round(statistics.median(flood_p50), 2),
        "other_p99_ms": round(statistics.median(flood_p99), 2),
        "other_p99_ratio": round(statistics.median(ratios), 2),
        "other_p99_ratio_spread": [round(min(ratios), 2), round(max(ratios), 2)],
        "answers": {str(k): v for k, v in sorted(answers.items())},
        "seconds": args.seconds,
        "repeats": args.repeats,
    }
    baseline = {
        "other_idle_p50_ms": round(statistics.median(idle_p50), 2),
        "other_idle_p99_ms": round(statistics.median(idle_p99), 2),
    }
    run.done(figures, baseline)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
