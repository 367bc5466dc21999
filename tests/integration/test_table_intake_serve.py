"""Intake in bulk against a real ``croupier serve`` (SQLite and PostgreSQL), issue 28 item 2.

Players on their table sockets send their bets all at once (so the table's intake takes
them in batches), and the server is killed with SIGKILL while they are still arriving.
After a restart on the same store:

- every bet the server had acknowledged is there exactly once: resent with its message
  id it gets the first answer and writes nothing (raw rows compared);
- a bet never acknowledged either landed whole (its resend gets its recorded answer) or
  not at all (its resend places it now): each message id is on its seat once, and each
  session's stake is exactly its seat's bets;
- the books balance: ``audit-cli verify --pin --balances`` passes.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_cli.main import main as audit_cli
from tests.integration.test_http_serve import launch
from tests.integration.test_table_e2e import BUY_IN, CONFIG, TABLE, _operator, _post
from tests.integration.test_table_socket_e2e import _sessions, _stop, _store, rows
from tests.table_client import SocketClient

PLAYERS = 16
BETS = 8
"""Bets each player sends (100 each, on the main bet: within its limit and the chips cap)."""
KILL_AFTER = PLAYERS * BETS // 3
"""Acknowledged bets after which the server is killed (the rest are in flight)."""


def _frame(i: int, k: int) -> dict[str, Any]:
    return {"id": f"p{i}-b{k}", "command": "bet", "bet": "main", "amount": 100}


async def _bet_until_killed(
    base: str, sessions: list[tuple[str, str]], proc: Any
) -> tuple[dict[str, dict[str, Any]], dict[str, int | None]]:
    """Every player sends its bets at once; the server dies once ``KILL_AFTER`` are
    acknowledged. Returns the acknowledged answers by message id, and each client's
    last message id seen."""
    clients = [SocketClient(base, TABLE, sid, token) for sid, token in sessions]
    for c in clients:
        c.open()
    for c in clients:
        await asyncio.wait_for(c.connected.wait(), 60)
    for c in clients:  # the runner opens the new table's first round: bets before are refused
        while (await c.next()).type != "round-opened":
            pass
    acked: dict[str, dict[str, Any]] = {}
    killed = asyncio.Event()

    async def one(c: SocketClient, i: int, k: int) -> None:
        try:
            got = await c.send(_frame(i, k), timeout=30)
        except (ConnectionError, TimeoutError, OSError, AttributeError):
            return  # in flight when the server died
        if got["type"] == "answer":
            acked[got["ref"]] = got
        if len(acked) >= KILL_AFTER and not killed.is_set():
            killed.set()
            os.killpg(proc.pid, signal.SIGKILL)  # the server and nothing else: no shutdown

    await asyncio.gather(
        *(one(c, i, k) for i, c in enumerate(clients) for k in range(BETS)),
        return_exceptions=True,
    )
    assert killed.is_set(), f"only {len(acked)} bets answered before every one was"
    last = {c.session: c.last_id for c in clients}
    for c in clients:
        await c.aclose()
    return acked, last


def _rows(db: str) -> list[tuple[Any, ...]]:
    """The raw rows but the checkpoints (the sealer's timer writes them on its own)."""
    return [r for r in rows(db) if not r[3].startswith("croupier/checkpoint/")]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_server_killed_during_bulk_intake_keeps_each_acknowledged_bet_exactly_once(
    backend: str, tmp_path: Path
) -> None:
    db, env = _store(backend, tmp_path)
    env["CROUPIER_STREAM_GRACE_SECONDS"] = "60"  # the killed sockets: not disconnections
    base, _, proc = launch(tmp_path, startup_seconds=180, **env)
    config = {**CONFIG, "betting_ms": 180_000}  # the window stays open across the restart
    op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=60)
    _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": config})
    sessions = _sessions(op, [f"k{i:02d}" for i in range(PLAYERS)])
    try:
        acked, last = asyncio.run(_bet_until_killed(base, sessions, proc))
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) < PLAYERS * BETS  # some were still in flight: a crash mid-intake

    base, _, proc = launch(tmp_path, startup_seconds=180, **env)  # the same store again
    op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=60)
    try:

        async def resend() -> dict[str, dict[str, Any]]:
            clients = [
                SocketClient(base, TABLE, sid, token, last_id=last[sid]) for sid, token in sessions
            ]
            for c in clients:
                c.open()
            for c in clients:
                await asyncio.wait_for(c.connected.wait(), 60)
            before = _rows(db)
            again = await asyncio.gather(
                *(
                    c.send(_frame(i, k))
                    for i, c in enumerate(clients)
                    for k in range(BETS)
                    if f"p{i}-b{k}" in acked
                )
            )
            for got in again:  # the first answer, word for word; nothing written
                assert got == acked[got["ref"]], got
            assert _rows(db) == before
            rest = await asyncio.gather(
                *(
                    c.send(_frame(i, k))
                    for i, c in enumerate(clients)
                    for k in range(BETS)
                    if f"p{i}-b{k}" not in acked
                )
            )
            for c in clients:
                await c.aclose()
            return {got["ref"]: got for got in [*again, *rest]}

        answers = asyncio.run(resend())
        assert all(a["type"] == "answer" for a in answers.values()), answers
        for i, (sid, _) in enumerate(sessions):
            mine = [answers[f"p{i}-b{k}"]["result"] for k in range(BETS)]
            # each bet once: the seat's main bet is the sum of its distinct messages
            seat = op.get(f"/v1/sessions/{sid}").json()
            assert seat["balance"] == BUY_IN - 100 * BETS, (sid, seat, mine)
            assert max(r["bets"]["main"] for r in mine) == 100 * BETS
            assert sorted(r["bets"]["main"] for r in mine) == [100 * (k + 1) for k in range(BETS)]
    finally:
        out = _stop(proc)
    pin = out.split("audit-cli verify --pin …): ", 1)[1].split()[0]
    keys = str(tmp_path / "keys" / "keyring.json")
    args = ["verify", "--db", db, "--pin", pin, "--keys", keys, "--balances", "--jobs", "1"]
    assert audit_cli(args) == 0
