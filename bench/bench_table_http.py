"""Benchmark: M players at one live Infinite Blackjack table over HTTP, on PostgreSQL:
each player on its own WebSocket (``--mode ws``: messages and commands on one
connection, issue 28) or with its own Server-Sent Events stream and REST commands
(``--mode sse``, issue 10); both by default, one after the other in the same run (the
SSE + REST figures are the baseline the WebSocket's are compared with).

``croupier serve`` runs in its own process on a fresh PostgreSQL schema; this process is
the load generator (httpx async, one client and one stream per player). Per M it plays
``--rounds`` rounds: at each ``round-opened`` every player places a main bet; at each
``options`` message it decides at once (hit below 12, else stand; no insurance), so
every step closes as soon as all have decided. Measured:

- bets accepted per second in the betting window (first bet sent to last answered);
- fan-out latency: for every ``bets-closed`` and ``step-closed`` message, the time from
  the server's close (its ``at``, the same machine's clock) to each client having it:
  p50 and p99 over all (client, message) pairs, and the p99 of the per-message maximum
  (the last client to get it);
- decision round trip: POST decide to its answer, p50/p99;
- events lost: after the run, the log is read in this process with the stream's own
  fold (``api.table_messages``), from before the first round to the end; each client's
  list of message ids must equal what the log says it should have got (its seat's and
  the table's): the difference is counted, also the streams that were dropped.

Goal (issue 10): 1,000 players on this 2-core machine, fan-out p99 <= 500 ms, decision
p99 <= 200 ms, nothing lost. The machine also runs PostgreSQL and other work: repeat and
give the spread with the load average (printed).

    PYTHONPATH=. python bench/bench_table_http.py --players 100 500 1000 [--runs 2] [--rounds 2]
        [--mode ws sse]

One JSON line per run and mode (bench/record.py: bench/results/bench_table_http.jsonl),
with ``players``, ``bets_refused``, ``decision_p99_ms``, ``fanout_p99_ms`` and ``lost``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
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


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


async def setup(base: str, op_headers: dict[str, str], m: int) -> list[tuple[str, str]]:
    sem = asyncio.Semaphore(40)
    async with httpx.AsyncClient(base_url=base, headers=op_headers, timeout=120) as op:

        async def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
            r = await op.post(url, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
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
    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.bet_times: dict[str, list[tuple[float, float]]] = {}
        """Per round code: (sent, answered) of every bet."""
        self.bets_ok = 0
        self.bets_refused = 0
        self.decisions: list[float] = []
        self.decisions_refused = 0
        self.refusals: dict[str, int] = {}
        """Refused bets and decisions by error code."""

    async def player(self, c: Client, start: asyncio.Event) -> None:
        c.open()
        await asyncio.wait_for(c.connected.wait(), 300)
        await start.wait()
        played: set[str] = set()
        while True:
            e = await c.next(timeout=300)
            code = e.data.get("code")
            opened = e.type in ("round-opened", "betting-waiting", "betting-extended")
            if opened and code not in played and len(played) < self.rounds:
                played.add(code)
                await self.bet(c, code)
            elif e.type == "options" and e.data["options"]:
                await self.decide(c, e)
            elif e.type == "round-settled" and len(played) >= self.rounds and code in played:
                return

    async def bet(self, c: Client, code: str) -> None:
        t = time.time()
        r = await c.post("bets", {"bet": "main", "amount": 100})
        self.bet_times.setdefault(code, []).append((t, time.time()))
        if r.status_code == 200:
            self.bets_ok += 1
        else:
            self.bets_refused += 1
            code = str(r.json().get("code"))
            self.refusals[code] = self.refusals.get(code, 0) + 1

    async def decide(self, c: Client, e: Received) -> None:
        offered = [o["decision"] for o in e.data["options"]]
        if "no-insurance" in offered:
            t = time.time()
            r = await c.post("insurance", {"take": False})
        else:
            hand = e.data["hands"][e.data["active"]]
            kind = "hit" if hand["total"] < 12 and "hit" in offered else "stand"
            t = time.time()
            r = await c.post("decide", {"step": e.data["step"], "decision": kind})
        if r.status_code == 200:
            self.decisions.append(time.time() - t)
        else:
            self.decisions_refused += 1
            code = str(r.json().get("code"))
            self.refusals[code] = self.refusals.get(code, 0) + 1


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


def run(m: int, rounds: int, mode: str) -> dict[str, Any]:
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
    }
    base, _, proc = launch(data_dir, startup_seconds=180, **env)
    load_before = os.getloadavg()
    try:
        tokens = json.loads((data_dir / "api-tokens.json").read_text())
        op_headers = {"Authorization": f"Bearer {tokens['operator']}"}
        config = {
            "betting_ms": max(5_000, 12 * m),
            "insurance_ms": 10_000,
            "step_ms": 20_000,
            "grace_ms": 300,
            "settle_batch": 250,
        }
        httpx.post(
            f"{base}/v1/tables",
            json={"table": TABLE, "currency": "EUR", "config": config},
            headers={**op_headers, "Idempotency-Key": "bench-table"},
            timeout=60,
        ).raise_for_status()
        result = asyncio.run(play(base, op_headers, m, rounds, mode))
        result["lost"], result["expected"] = lost(result, db, data_dir)
    finally:
        proc.terminate()
        proc.communicate(timeout=120)
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    result["load"] = (load_before, os.getloadavg())
    return result


async def play(
    base: str, op_headers: dict[str, str], m: int, rounds: int, mode: str
) -> dict[str, Any]:
    sessions = await setup(base, op_headers, m)
    bench = Bench(rounds)
    kind = SocketClient if mode == "ws" else TableClient
    clients: list[Client] = [kind(base, TABLE, sid, token) for sid, token in sessions]
    start = asyncio.Event()
    tasks = [asyncio.create_task(bench.player(c, start)) for c in clients]
    for c in clients:
        await asyncio.wait_for(c.connected.wait(), 600)
    first_ids = [c.last_id or 0 for c in clients]
    start.set()
    t0 = time.time()
    await asyncio.gather(*tasks)
    elapsed = time.time() - t0
    fan: list[float] = []
    worst: list[float] = []
    by_message: dict[int, list[float]] = {}
    for c in clients:
        for e in c.events:
            if e.type in ("bets-closed", "step-closed") and e.id is not None:
                closed = _ts(e.data["at"])
                by_message.setdefault(e.id, []).append(e.at - closed)
    for lat in by_message.values():
        fan.extend(lat)
        worst.append(max(lat))
    window = sum(
        max(d for _, d in times) - min(t for t, _ in times) for times in bench.bet_times.values()
    )
    out = {
        "mode": mode,
        "players": m,
        "elapsed_s": elapsed,
        "bets_ok": bench.bets_ok,
        "bets_refused": bench.bets_refused,
        "bets_per_s": bench.bets_ok / window if window else float("nan"),
        "fanout_p50_ms": 1000 * pct(fan, 50),
        "fanout_p99_ms": 1000 * pct(fan, 99),
        "fanout_last_client_p99_ms": 1000 * pct(worst, 99),
        "decision_p50_ms": 1000 * pct(bench.decisions, 50),
        "decision_p99_ms": 1000 * pct(bench.decisions, 99),
        "decisions": len(bench.decisions),
        "decisions_refused": bench.decisions_refused,
        "refusals": bench.refusals,
        "reconnects": sum(c.streams_opened - 1 for c in clients),
        "_clients": clients,
        "_after": min(first_ids),
    }
    for c in clients:
        await c.aclose()
    return out


def lost(result: dict[str, Any], db: str, data_dir: Path) -> tuple[int, int]:
    clients: list[Client] = result.pop("_clients")
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
    args = ap.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    for m in args.players:
        for k in range(args.runs):
            baseline: dict[str, Any] | None = None
            for mode in sorted(args.mode):  # sse (the baseline), then ws
                record = Run("bench_table_http", f"{mode} players={m} run={k + 1}")
                r = run(m, args.rounds, mode)
                r.pop("load")
                figures = {key: round(v, 1) if isinstance(v, float) else v for key, v in r.items()}
                record.done(figures, baseline if mode == "ws" else None)
                if mode == "sse":
                    baseline = figures


if __name__ == "__main__":
    main()
