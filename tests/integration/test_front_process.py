"""A front (``CROUPIER_ROLE=front``) beside a tables process (``CROUPIER_ROLE=tables``) on
one PostgreSQL log (ledger/runner_lease.py): the players' sockets and commands and the
log's upkeep (the views' fold, the seals) on the front, the table's runner on the tables
process. The front never takes the runners' lease, not even when the tables process is
gone, and the tables process never the upkeep's; on SQLite the split roles are refused
at start."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_cli.main import main as audit_cli
from ledger.runner_lease import SPLIT_NEEDS_POSTGRES, upkeep_lock_name
from tests.integration.test_http_serve import launch
from tests.integration.test_operability import _serve
from tests.integration.test_table_e2e import BUY_IN, CONFIG, TABLE, _operator, _post
from tests.integration.test_table_socket_e2e import _sessions, _stop, _store
from tests.integration.test_upkeep_workers import _lease_holder, _log, _until
from tests.table_client import SocketClient

PLAYERS = 3
BET = 100


async def _play_a_round(base: str, sessions: list[tuple[str, str]]) -> list[SocketClient]:
    """Each player joins and bets on its socket, decides nothing (the steps' timeouts
    decide), and waits for its round's ``round-settled``."""
    clients = [SocketClient(base, TABLE, sid, token) for sid, token in sessions]
    for c in clients:
        c.open()
    for c in clients:
        await asyncio.wait_for(c.connected.wait(), 60)
    for i, c in enumerate(clients):
        joined = await c.send({"id": f"j{i}", "command": "join"})
        assert joined["type"] == "answer", joined
        for k in range(20):
            # a loaded machine may set the players up past the first window's close; the
            # round then waits for a first bet (a bet inside the close's grace is refused)
            body = {"id": f"b{i}-{k}", "command": "bet", "bet": "main", "amount": BET}
            bet = await c.send(body)
            if bet.get("code") != "betting-closed":
                break
            await asyncio.sleep(0.5)
        assert bet["type"] == "answer", bet

    async def settled(c: SocketClient) -> None:
        while not any(e.type == "round-settled" for e in c.events):
            await asyncio.sleep(0.1)

    await asyncio.wait_for(asyncio.gather(*(settled(c) for c in clients)), 120)
    for c in clients:
        await c.aclose()
    return clients


@pytest.mark.postgres
def test_a_front_plays_a_round_a_tables_process_runs_and_neither_takes_the_other_s_lease(
    tmp_path: Path,
) -> None:
    db, env = _store("postgres", tmp_path)
    schema = db.partition("?schema=")[2]
    _, _, tables = launch(tmp_path, startup_seconds=180, CROUPIER_ROLE="tables", **env)
    front = None
    try:
        _until("the tables process takes its lease", lambda: _lease_holder(schema, [tables.pid]))
        base, _, front = launch(tmp_path, startup_seconds=180, CROUPIER_ROLE="front", **env)
        _until(
            "the front takes the upkeep's lease",
            lambda: _lease_holder(schema, [front.pid], upkeep_lock_name),
        )
        op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=60)
        sessions = _sessions(op, [f"f{i}" for i in range(PLAYERS)])
        # the first round's window opens now: the players bet in it at once
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": CONFIG})
        clients = asyncio.run(_play_a_round(base, sessions))
        for c, (sid, _) in zip(clients, sessions, strict=True):
            # the socket's last balance is the ledger's, read through the front
            balances = [e.data["balance"] for e in c.events if e.type == "balance"]
            session: dict[str, Any] = op.get(f"/v1/sessions/{sid}").json()
            assert balances and balances[-1] == session["balance"], (balances, session)
            # no decision sent: the timeouts stand, so a seat lost, pushed, won or had
            # a blackjack (3:2)
            outcomes = {BUY_IN - BET, BUY_IN, BUY_IN + BET, BUY_IN + BET * 3 // 2}
            assert session["balance"] in outcomes, session
        both = [tables.pid, front.pid]
        assert _lease_holder(schema, both) == tables.pid
        assert _lease_holder(schema, both, upkeep_lock_name) == front.pid

        def caught_up() -> bool:
            head, views, _ = _log(schema)
            return set(views.values()) == {head}

        # the front folds the tables process's events too: the views reach the log's head
        _until("the views reach the head", caught_up)
        _, _, sealed = _log(schema)
        _until("the front seals", lambda: _log(schema)[2] > sealed)

        # the tables process is gone: the front serves on, never running the tables
        os.killpg(tables.pid, signal.SIGKILL)
        said = tables.communicate(timeout=60)[0]
        assert "this process runs the tables (" in said  # its lease's log line
        assert "folds the views" not in said
        _post(op, "/v1/accounts/f0/deposits", {"amount": 5})
        time.sleep(3)  # the lease's retry is 1 s: a front that tried would hold it now
        assert _lease_holder(schema, [front.pid]) is None
        out = _stop(front)
        front = None
        assert "this process folds the views and seals" in out
        assert "runs the tables" not in out
    finally:
        for proc in (front, tables):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=60)
    pin = str(tmp_path / "keys" / "keyring.json")
    assert audit_cli(["verify", "--db", db, "--pin", pin, "--balances", "--jobs", "1"]) == 0


@pytest.mark.parametrize("role", ["front", "tables"])
def test_a_split_role_on_sqlite_is_refused_at_start(tmp_path: Path, role: str) -> None:
    done = _serve({"CROUPIER_DATA_DIR": str(tmp_path), "CROUPIER_ROLE": role}, tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {SPLIT_NEEDS_POSTGRES.format(role=role)}"
    assert not (tmp_path / "casino.sqlite").exists()  # refused before anything was made


def test_an_unknown_role_is_refused_at_start(tmp_path: Path) -> None:
    done = _serve({"CROUPIER_DATA_DIR": str(tmp_path), "CROUPIER_ROLE": "runner"}, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "CROUPIER_ROLE: Input should be 'all', 'front' or 'tables'" in done.stderr
    assert not (tmp_path / "casino.sqlite").exists()
