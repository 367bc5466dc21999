"""The table WebSocket end to end against a real ``croupier serve`` (SQLite and
PostgreSQL), issue 28 item 1.

- Sixty players (50 on the socket, 10 on the stream) are in
  tests/integration/test_table_sixty_players.py.
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

from tests.conftest import PG_URL, require_postgres
from tests.integration.test_http_serve import launch
from tests.integration.test_table_e2e import BUY_IN, CONFIG, TABLE, _operator, _post
from tests.table_client import SocketClient, TableClient

BOOKKEEPING = ("croupier/presence-worker/", "croupier/blackjack/presence/", "croupier/checkpoint/")
"""Rows a resend is not compared on: where the session's connections are held and the
serving process's beat (ledger/presence.py), which opening a socket writes (in the
background, after the handshake) and a serving process writes every few seconds,
whatever the client sends; and the checkpoints the sealer's timer writes every second
over whatever is new (a restarted server's own rows, on a slow machine after the
"before" was read)."""


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


def _stop(proc: Any) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert "Application shutdown complete" in out, out[-3000:]
    return str(out)


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


def holders(db: str, session: str) -> tuple[list[str], set[str]]:
    """The processes that took hold of the session's seat at TABLE, in order, and those
    holding it now (ledger/presence.py's events, from the log)."""
    from audit_cli.rows import read_rows
    from ledger import contracts, envelope
    from ledger.presence import presence_id_for

    presence = str(presence_id_for(session, TABLE))
    took: list[str] = []
    now: set[str] = set()
    for r in read_rows(db):
        if r.originator_id != presence:
            continue
        worker = json.loads(envelope.decode(r.state).payload)["worker"]
        if r.topic in (contracts.TABLE_PRESENCE_OPENED, contracts.TABLE_PRESENCE_HELD):
            took.append(worker)
            now.add(worker)
        elif r.topic == contracts.TABLE_PRESENCE_RELEASED:
            now.discard(worker)
    return took, now


async def _until(wanted: Any, what: str, seconds: float = 30) -> None:
    try:
        async with asyncio.timeout(seconds):
            while not await asyncio.to_thread(wanted):
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"never: {what}") from None


@pytest.mark.postgres
def test_two_workers_one_session_closing_one_connection_keeps_the_seat(tmp_path: Path) -> None:
    """``croupier serve --workers 2``: a session with a socket on one worker and a stream
    on the other (which worker takes a connection is the kernel's choice: a stream that
    landed on the socket's worker is closed and opened again). Closing the socket keeps
    the seat connected and its bet standing after its worker let go; closing the stream
    too disconnects it after the grace: before the betting deadline, the bet is refunded."""
    db, env = _store("postgres", tmp_path)
    env["CROUPIER_STREAM_GRACE_SECONDS"] = "1"
    base, _, proc = launch(tmp_path, "--workers", "2", startup_seconds=180, **env)
    config = {**CONFIG, "betting_ms": 120_000}
    try:
        op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=30)
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": config})
        ((sid, token),) = _sessions(op, ["two"])
        seat_url = f"/v1/sessions/{sid}/tables/{TABLE}"
        player = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})

        def balance() -> int:
            return int(op.get(f"/v1/sessions/{sid}").json()["balance"])

        async def go() -> None:
            socket = SocketClient(base, TABLE, sid, token)
            socket.open()
            await socket.next()
            await _until(lambda: len(holders(db, sid)[1]) == 1, "the socket's worker holds")
            (first,) = holders(db, sid)[1]
            for _ in range(12):
                stream = TableClient(base, TABLE, sid, token)
                stream.open()
                await stream.next()
                try:  # a hold of its own within 5 s: the stream is on the other worker
                    await _until(lambda: len(holders(db, sid)[1]) == 2, "two holders", 5)
                    break
                except AssertionError:
                    await stream.aclose()
            else:
                raise AssertionError("every stream landed on the socket's worker")
            bet = await socket.send({"id": "b1", "command": "bet", "bet": "main", "amount": 500})
            assert bet["type"] == "answer", bet
            await socket.aclose()
            await _until(lambda: first not in holders(db, sid)[1], "the socket's worker let go")
            # the other worker holds the seat: connected, the bet stands
            assert balance() == BUY_IN - 500
            seat = player.get(seat_url).json()["seat"]
            assert seat["connected"] is True and seat["bets"] == {"main": 500}, seat
            await stream.aclose()
            await _until(lambda: balance() == BUY_IN, "nobody holds it: disconnected, refunded")
            assert holders(db, sid)[1] == set()

        asyncio.run(go())
        player.close()
    finally:
        _stop(proc)
