"""Benchmark: the CPU a game round costs in the HTTP application itself, FastAPI's handler
against the lean path (``api/front.py`` with ``api/fast_route.py``: ``fast_route.LEAN``),
side by side in one process.

The application (``create_app`` on a ``Casino`` over SQLite in a temporary directory; no
read side, sealer or live table running, so nothing but the requests uses the CPU) is
called as an ASGI app straight from this process's event loop: no socket, no uvicorn, a
client of a few dict lookups. ``--sessions`` sessions play Red Dog rounds together (a
bet of 1,000, and see when the round stays open) in blocks of ``--rounds`` rounds, the
blocks alternating between FastAPI's handler (``api.fast_route.LEAN = False``) and the
lean one, ``--blocks`` of each. A block's CPU is the process's user and system time
(every thread: the loop and the group-commit writer), so a load that moves during the
run moves both sides alike. Prints each side's CPU per round (median and spread of its
blocks) and their ratio, then the same for the event loop's thread alone (the HTTP
application and this client, without the command's worker thread: what the handler
changes); records the run (``bench/record.py``).

    python bench/bench_edge.py [--sessions 20] [--rounds 200] [--blocks 5] [--sides lean]

``--sides lean`` (or ``fastapi``) plays one side only, not recorded: to profile it
(``py-spy record --pid``) without the other side's samples.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import Run  # noqa: E402

from api import fast_route  # noqa: E402  # after the path set-up above
from api.app import create_app  # noqa: E402
from api.auth import Credentials  # noqa: E402
from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402

OPERATOR = "edge-bench-operator-token-0123456789"
AUDITOR = "edge-bench-auditor-token-0123456789"
BET = 1_000


class Client:
    """Calls the ASGI app with one request and collects the answer."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.n = 0

    async def post(self, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        self.n += 1
        payload = b"" if body is None else orjson.dumps(body)
        headers = [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"idempotency-key", f"k{self.n}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        sent = False
        status = 0
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, orjson.loads(b"".join(parts))


async def play(client: Client, sid: str, token: str, rounds: int) -> None:
    base = f"/v1/sessions/{sid}/red-dog"
    for _ in range(rounds):
        status, r = await client.post(f"{base}/bet", token, {"bet": BET})
        assert status == 200, r
        if r["status"] == "open":
            status, r = await client.post(f"{base}/see", token)
            assert status == 200, r
        assert r["status"] == "settled", r


async def run(args: argparse.Namespace, data: Path) -> dict[str, list[float]]:
    casino = bootstrap(
        Settings(
            data_dir=data,
            session_commands_per_second=0,  # no command rate limit: the bench's pace
            requests_per_credential_per_second=1_000_000,
            requests_per_address_per_second=1_000_000,  # every session is one address here
        )
    )
    credentials = Credentials(OPERATOR, AUDITOR, b"e" * 32, "bench", "bench")
    app = create_app(casino, casino.settings, credentials=credentials)
    client = Client(app)
    sessions = []
    for n in range(args.sessions):
        player = f"p{n}"
        casino.open_account(f"{player}-a", player, "EUR")
        casino.deposit(f"{player}-d", player, 100_000_000)
        status, doc = await client.post(
            "/v1/sessions", OPERATOR, {"player_id": player, "buy_in": 100_000_000}
        )
        assert status in (200, 201), doc
        sessions.append((doc["session_id"], doc["token"]))
    per = max(1, args.rounds // args.sessions)
    cpu: dict[str, list[float]] = {"fastapi": [], "lean": [], "fastapi loop": [], "lean loop": []}
    try:
        await asyncio.gather(*(play(client, s, t, 2) for s, t in sessions))  # warm-up
        for _ in range(args.blocks):
            for side in args.sides:
                fast_route.LEAN = side == "lean"
                start, loop = time.process_time(), time.thread_time()
                await asyncio.gather(*(play(client, s, t, per) for s, t in sessions))
                played = per * len(sessions)
                cpu[side].append((time.process_time() - start) / played * 1000)
                cpu[f"{side} loop"].append((time.thread_time() - loop) / played * 1000)
    finally:
        fast_route.LEAN = True
        casino.close()
    return cpu


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} ms (runs {min(values):.3f}–{max(values):.3f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--rounds", type=int, default=200, help="rounds per block")
    p.add_argument("--blocks", type=int, default=5, help="blocks of each side")
    p.add_argument(
        "--sides",
        nargs="+",
        default=["fastapi", "lean"],
        choices=["fastapi", "lean"],
        help="one side only: to profile it (py-spy), not recorded",
    )
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args()
    record = Run("bench_edge", f"red-dog sqlite in-process ASGI sessions={args.sessions}")
    print(
        f"Red Dog rounds through the ASGI app in process (SQLite), {args.sessions} sessions,"
        f" {args.blocks} blocks of {args.rounds} rounds a side; {os.cpu_count()} cores;"
        f" load average {os.getloadavg()[0]:.2f} at start"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cpu = asyncio.run(run(args, Path(tmp)))
    if len(args.sides) < 2:
        for side in args.sides:
            print(f"  {side}: CPU per round {spread(cpu[side])}")
            print(f"  {side}, the event loop's thread: {spread(cpu[f'{side} loop'])}")
        return 0
    ratios = [lean / slow for lean, slow in zip(cpu["lean"], cpu["fastapi"], strict=True)]
    loops = [a / b for a, b in zip(cpu["lean loop"], cpu["fastapi loop"], strict=True)]
    print(f"  FastAPI's handler: CPU per round {spread(cpu['fastapi'])}")
    print(f"  lean handler:      CPU per round {spread(cpu['lean'])}")
    print(f"  lean / FastAPI per block pair: {', '.join(f'{r:.2f}' for r in ratios)}")
    print("  the event loop's thread alone (the HTTP application and this client):")
    print(f"  FastAPI's handler: CPU per round {spread(cpu['fastapi loop'])}")
    print(f"  lean handler:      CPU per round {spread(cpu['lean loop'])}")
    print(f"  lean / FastAPI per block pair: {', '.join(f'{r:.2f}' for r in loops)}")
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    if not args.no_record:
        figures = {
            "cpu_ms_per_round_lean": round(statistics.median(cpu["lean"]), 3),
            "cpu_ms_per_round_lean_spread": [
                round(min(cpu["lean"]), 3),
                round(max(cpu["lean"]), 3),
            ],
            "lean_over_fastapi": round(statistics.median(ratios), 3),
            "loop_cpu_ms_per_round_lean": round(statistics.median(cpu["lean loop"]), 3),
            "loop_lean_over_fastapi": round(statistics.median(loops), 3),
        }
        baseline = {
            "cpu_ms_per_round_fastapi": round(statistics.median(cpu["fastapi"]), 3),
            "cpu_ms_per_round_fastapi_spread": [
                round(min(cpu["fastapi"]), 3),
                round(max(cpu["fastapi"]), 3),
            ],
            "loop_cpu_ms_per_round_fastapi": round(statistics.median(cpu["fastapi loop"]), 3),
        }
        record.done(figures, baseline, quiet=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
