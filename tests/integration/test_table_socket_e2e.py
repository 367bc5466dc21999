"""The table WebSocket end to end against a real ``croupier serve`` (SQLite and
PostgreSQL), issue 28 item 1.

- Ten WebSocket players and ten SSE + REST players (tests/integration/test_table_e2e.py's
  players, one shoe change, every bet type and decision, timeouts, one socket lost before
  the betting deadline and one after, resumed with ``last_event_id``): every client's
  balance and results equal the ledger's, and ``audit-cli verify --pin --balances``
  passes.
- A command resent with the same message id after a reconnect, and after a server
  restart, gets the first answer and changes nothing (raw rows compared); the same id
  with another body is ``idempotency-conflict`` and changes nothing; join and leave.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_cli.main import main as audit_cli
from tests.conftest import PG_URL, require_postgres
from tests.integration.test_http_serve import launch
from tests.integration.test_table_e2e import (
    BUY_IN,
    CLIENTS,
    CONFIG,
    TABLE,
    Player,
    _check,
    _operator,
    _post,
)
from tests.table_client import SocketClient, TableClient

BOOKKEEPING = ("croupier/presence-worker/", "croupier/blackjack/presence/")
"""Rows a resend is not compared on: where the session's connections are held and the
serving process's beat (ledger/presence.py), which opening a socket writes (in the
background, after the handshake) and a serving process writes every few seconds,
whatever the client sends."""


def _store(backend: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    env = {"CROUPIER_STREAM_GRACE_SECONDS": "0.5"}
    if backend == "sqlite":
        return str(tmp_path / "casino.sqlite"), env
    require_postgres()
    import psycopg

    schema = "wse2e_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    db = f"{PG_URL}?schema={schema}"
    env["CROUPIER_DATABASE_URL"] = db
    return db, env


def rows(db: str) -> list[tuple[Any, ...]]:
    """Every stored event row but a process's beat, as the database holds it."""
    if db.startswith("postgresql"):
        import psycopg

        url, _, schema = db.partition("?schema=")
        with psycopg.connect(url) as conn:
            got = conn.execute(
                f"SELECT notification_id, originator_id, originator_version, topic, state "
                f"FROM {schema}.casino_events ORDER BY notification_id"
            ).fetchall()
    else:
        lite = sqlite3.connect(db)
        try:
            got = lite.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                "FROM stored_events ORDER BY rowid"
            ).fetchall()
        finally:
            lite.close()
    return [
        (n, str(o), v, t, bytes(s))
        for n, o, v, t, s in got
        if not t.startswith(BOOKKEEPING) and not _presence_request(t, bytes(s))
    ]


def _presence_request(topic: str, state: bytes) -> bool:
    """The request record of a presence command (its idempotency, written with it)."""
    names = (b'"blackjack_presence_', b'"presence_worker_beat"')
    return topic == "croupier/request/accepted@1" and any(n in state for n in names)


def _sessions(op: httpx.Client, names: list[str]) -> list[tuple[str, str]]:
    out = []
    for player in names:
        _post(op, "/v1/accounts", {"player_id": player, "currency": "EUR"})
        _post(op, f"/v1/accounts/{player}/deposits", {"amount": 1_000_000})
        s = _post(op, "/v1/sessions", {"player_id": player, "buy_in": BUY_IN})
        out.append((s["session_id"], s["token"]))
    return out


async def play_mixed(base: str, sessions: list[tuple[str, str]]) -> list[Player]:
    shared: dict[str, Any] = {"events": {}}
    clients: list[Any] = [
        (SocketClient if i % 2 else TableClient)(base, TABLE, sid, token)
        for i, (sid, token) in enumerate(sessions)
    ]
    players = [Player(i, c, shared) for i, c in enumerate(clients)]
    try:
        await asyncio.wait_for(asyncio.gather(*(p.play() for p in players)), 150)
    finally:
        for c in clients:
            await c.aclose()
    return players


def _stop(proc: Any) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert "Application shutdown complete" in out, out[-3000:]
    return str(out)


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_socket_and_stream_players_play_ten_rounds_and_the_books_agree(
    backend: str, tmp_path: Path
) -> None:
    db, env = _store(backend, tmp_path)
    base, _, proc = launch(tmp_path, startup_seconds=180, **env)
    try:
        op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=30)
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": CONFIG})
        sessions = _sessions(op, [f"p{i:02d}" for i in range(CLIENTS)])
        players = asyncio.run(play_mixed(base, sessions))
        _check(op, players)
        sockets = [p for p in players if isinstance(p.c, SocketClient)]
        assert len(sockets) == CLIENTS // 2
        for p in sockets:  # a socket carries the same messages as a stream: the same ids
            assert all(e.id is None or e.id > 0 for e in p.c.events)
    finally:
        out = _stop(proc)
    pin = out.split("audit-cli verify --pin …): ", 1)[1].split()[0]
    keys = str(tmp_path / "keys" / "keyring.json")
    args = ["verify", "--db", db, "--pin", pin, "--keys", keys, "--balances", "--jobs", "1"]
    assert audit_cli(args) == 0


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_resent_message_id_gets_the_first_answer_across_a_reconnect_and_a_restart(
    backend: str, tmp_path: Path
) -> None:
    db, env = _store(backend, tmp_path)
    env["CROUPIER_STREAM_GRACE_SECONDS"] = "20"  # a reconnect, not a disconnection
    base, _, proc = launch(tmp_path, startup_seconds=180, **env)
    config = {**CONFIG, "betting_ms": 120_000}  # the window stays open across the restart
    try:
        op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=30)
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": config})
        ((sid, token),) = _sessions(op, ["ria"])

        async def first() -> tuple[SocketClient, dict[str, Any]]:
            c = SocketClient(base, TABLE, sid, token)
            c.open()
            await c.next()
            joined = await c.send({"id": "j1", "command": "join"})
            assert joined["type"] == "answer", joined
            bet = await c.send({"id": "b1", "command": "bet", "bet": "main", "amount": 500})
            assert bet["type"] == "answer" and bet["result"]["bets"] == {"main": 500}, bet
            await c.close_stream()
            before = rows(db)
            c.open()  # a reconnect, resumed after the last id it saw
            again = await c.send({"id": "b1", "command": "bet", "bet": "main", "amount": 500})
            assert again == bet
            other = await c.send({"id": "b1", "command": "bet", "bet": "main", "amount": 900})
            assert (other["type"], other["code"], other["status"]) == (
                "error",
                "idempotency-conflict",
                409,
            )
            assert rows(db) == before
            await c.aclose()
            return c, bet

        c, bet = asyncio.run(first())
    finally:
        _stop(proc)
    base, _, proc = launch(tmp_path, startup_seconds=180, **env)  # the same store again
    try:

        async def after_restart() -> None:
            again = SocketClient(base, TABLE, sid, token, last_id=c.last_id)
            again.open()
            await asyncio.wait_for(again.connected.wait(), 30)
            before = rows(db)
            resent = await again.send({"id": "b1", "command": "bet", "bet": "main", "amount": 500})
            assert resent == bet
            assert rows(db) == before
            left = await again.send({"id": "l1", "command": "leave"})
            assert left["type"] == "answer", left  # before the deadline: the bet comes back
            assert left["result"]["balance"] == BUY_IN
            await again.aclose()

        asyncio.run(after_restart())
        session = httpx.get(
            f"{base}/v1/sessions/{sid}", headers=_operator(tmp_path), timeout=30
        ).json()
        assert session["balance"] == BUY_IN
        assert json.dumps(session)  # the session answers after it all
    finally:
        _stop(proc)


@pytest.mark.postgres
def test_two_servers_one_session_closing_one_connection_keeps_the_seat(tmp_path: Path) -> None:
    """Two ``croupier serve`` processes on one PostgreSQL database (as two hosts, or two
    workers): a session with a socket on one and a stream on the other. Closing one keeps
    the seat connected and its bet standing past the grace; closing both disconnects it
    after the grace: before the betting deadline its bet is refunded."""
    db, env = _store("postgres", tmp_path)
    env["CROUPIER_STREAM_GRACE_SECONDS"] = "1"
    base_a, _, proc_a = launch(tmp_path, startup_seconds=180, **env)
    base_b, _, proc_b = launch(tmp_path, startup_seconds=180, **env)
    config = {**CONFIG, "betting_ms": 120_000}
    try:
        op = httpx.Client(base_url=base_a, headers=_operator(tmp_path), timeout=30)
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": config})
        ((sid, token),) = _sessions(op, ["two"])

        def balance() -> int:
            return int(op.get(f"/v1/sessions/{sid}").json()["balance"])

        async def go() -> None:
            on_a = SocketClient(base_a, TABLE, sid, token)
            on_b = TableClient(base_b, TABLE, sid, token)
            on_a.open()
            on_b.open()
            await on_a.next()
            await on_b.next()
            bet = await on_a.send({"id": "b1", "command": "bet", "bet": "main", "amount": 500})
            assert bet["type"] == "answer", bet
            await on_a.aclose()
            await asyncio.sleep(4)  # the grace (1 s) four times over: A has released
            assert balance() == BUY_IN - 500  # B holds the seat: the bet stands
            await on_b.aclose()
            async with asyncio.timeout(30):
                while balance() != BUY_IN:  # nobody holds it: disconnected, refunded
                    await asyncio.sleep(0.2)

        asyncio.run(go())
        import psycopg

        url, _, schema = db.partition("?schema=")
        with psycopg.connect(url) as conn:
            topics = [
                t
                for (t,) in conn.execute(
                    f"SELECT topic FROM {schema}.casino_events ORDER BY notification_id"
                )
            ]
        # each server held and released the seat; the second release disconnected it
        assert topics.count("croupier/blackjack/presence/released@1") == 2
        assert topics.count("croupier/blackjack/seat/bets-cancelled@1") == 1
    finally:
        _stop(proc_b)
        _stop(proc_a)


def test_the_connection_guard_counts_a_socket_until_it_closes(tmp_path: Path) -> None:
    """A socket is a connection of its address for the guard (api/connection_guard.py):
    with three allowed per address, a fourth handshake is answered 503 and not upgraded;
    once one socket has closed, a new one opens (its count was released)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    base, _, proc = launch(tmp_path, startup_seconds=180, CROUPIER_MAX_CONNECTIONS_PER_ADDRESS="3")
    try:
        with httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=30) as op:
            _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": CONFIG})
            sessions = _sessions(op, ["g1", "g2", "g3", "g4"])
        ws = base.replace("http://", "ws://", 1) + f"/v1/tables/{TABLE}/ws?access_token="

        async def go() -> None:
            held = [await connect(ws + token) for _, token in sessions[:3]]
            with pytest.raises(InvalidStatus) as e:
                async with connect(ws + sessions[3][1]):
                    pass
            assert e.value.response.status_code == 503
            assert json.loads(e.value.response.body or b"{}")["code"] == "too-many-connections"
            await held.pop().close()
            for _ in range(50):  # the server hears of the close a moment later
                try:
                    async with connect(ws + sessions[3][1]):
                        break
                except InvalidStatus:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("a closed socket's connection was never released")
            for h in held:
                await h.close()

        asyncio.run(go())
    finally:
        out = _stop(proc)
    # a socket is no log line of its own (a thousand players would flood the log, and
    # block a server whose output nobody reads fast enough)
    assert "[accepted]" not in out
