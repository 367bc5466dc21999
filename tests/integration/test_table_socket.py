"""The table WebSocket over real uvicorn (in a thread, on the runner's fake clock), both
stores: who may open it and how a refusal looks, every command answered as REST answers
it, a resent message id answered with the first answer and nothing changed (compare raw
rows), the same id with another body refused, no other seat's data, no hidden card.

The ledger's clock is fake (the runner is ticked by hand); every wait is for a frame,
with the client's receive timeout as the failure (no sleeps)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from api.app import create_app
from api.auth import Credentials
from api.connection_guard import uvicorn_options
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.leak_scan import card_ids_in, card_needles, scan_bytes, seed_needles
from tests.integration.table_helpers import CONFIG, Live, a_seed_that_stops_at_a_step
from tests.integration.test_table_hidden_scan import SEED, SHOE, SecretLive
from tests.integration.test_table_socket_e2e import BOOKKEEPING, _presence_request

OPERATOR, AUDITOR = "op-token-" + "x" * 20, "aud-token-" + "y" * 20


def ledger_rows(store: Any) -> list[tuple[Any, ...]]:
    """Every stored row but the connections' presence and the process's beat: opening a
    socket holds its seat in the background, after the handshake, and a serving process
    beats every few seconds, so those rows may land between two reads of a test (CI saw
    a presence row land after a resend's ``before``)."""
    return [
        r
        for r in raw_rows(store)
        if not r[3].startswith(BOOKKEEPING) and not _presence_request(r[3], r[4])
    ]


class Served:
    def __init__(self, store: Store, live: Live | None = None, **settings: Any) -> None:
        self.store = store
        # the first round stops at a step (a random shoe sometimes deals a blackjack that
        # settles at once, and a test waiting for its options then waits in vain)
        self.live = live or Live(
            store, config=dict(CONFIG), seeds=(a_seed_that_stops_at_a_step(CONFIG),)
        )
        self.creds = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
        chosen = store.settings(**settings) if settings else None
        self.api = create_app(self.live.app, chosen, credentials=self.creds)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self.ws = f"ws://127.0.0.1:{port}/v1/tables"
        options = uvicorn_options(self.live.app.settings)
        ws_options = {k: v for k, v in options.items() if k.startswith("ws")}
        config = uvicorn.Config(
            self.api, log_level="warning", timeout_graceful_shutdown=2, **ws_options
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]})
        self.thread.start()
        self.client = httpx.Client(base_url=self.base, timeout=20)

    def token(self, session: str) -> str:
        return self.creds.session_token(session)

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture
def served(store: Store) -> Iterator[Served]:
    s = Served(store)
    try:
        yield s
    finally:
        s.stop()


class Socket:
    """One table socket: frames split into messages; ``until`` reads to a wanted one."""

    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        self.messages: list[dict[str, Any]] = []
        self.raw: list[str] = []

    async def until(self, wanted: Any, timeout: float = 20) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.conn.recv()
                assert isinstance(frame, str)
                self.raw.append(frame)
                found = None
                for line in frame.split("\n"):
                    m: dict[str, Any] = json.loads(line)
                    self.messages.append(m)
                    if found is None and wanted(m):
                        found = m
                if found is not None:
                    return found

    async def command(self, mid: str, command: str, **body: Any) -> dict[str, Any]:
        await self.conn.send(json.dumps({"id": mid, "command": command, **body}))
        return await self.until(lambda m: m["type"] in ("answer", "error") and m["ref"] == mid)


def _open(s: Served, session: str, table: str = "T1", **query: str) -> Any:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    url = f"{s.ws}/{table}/ws" + (f"?{q}" if q else "")
    return connect(url, additional_headers={"Authorization": f"Bearer {s.token(session)}"})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_socket_is_refused_as_rest_refuses(served: Served) -> None:
    s = served
    ann = s.live.player("ann")
    s.live.tick()

    async def refused(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        with pytest.raises(InvalidStatus) as e:
            async with connect(url, additional_headers=headers or {}):
                pass
        body = json.loads(e.value.response.body or b"{}")
        return e.value.response.status_code, body.get("code", "")

    async def go() -> None:
        url = f"{s.ws}/T1/ws"
        assert await refused(url) == (401, "unauthenticated")
        for token in (OPERATOR, AUDITOR):
            assert await refused(url, {"Authorization": f"Bearer {token}"}) == (403, "forbidden")
        own = {"Authorization": f"Bearer {s.token(ann)}"}
        assert await refused(f"{s.ws}/nope/ws", own) == (404, "table-not-found")
        assert await refused(f"{url}?last_event_id=abc", own) == (422, "invalid-request")
        assert await refused(f"{url}?last_event_id=999999999", own) == (422, "invalid-request")
        # a browser's WebSocket sends no header: the token as access_token
        async with connect(f"{url}?access_token={s.token(ann)}") as ok:
            await Socket(ok).until(lambda m: m["type"] == "round-opened")
            async with _open(s, ann):  # two per session (the stream's limit, together)
                assert await refused(url, own) == (429, "too-many-streams")

    run(go())


def test_every_command_is_answered_and_a_resent_id_changes_nothing(served: Served) -> None:
    s = served
    ann = s.live.player("ann")
    s.live.tick()

    async def go() -> None:
        async with _open(s, ann) as conn:
            ws = Socket(conn)
            await ws.until(lambda m: m["type"] == "round-opened")
            joined = await ws.command("j1", "join")
            assert joined["type"] == "answer" and joined["result"]["table"] == "T1"
            first = await ws.command("b1", "bet", bet="main", amount=100)
            assert first["result"]["bets"] == {"main": 100}
            before = ledger_rows(s.store)
            again = await ws.command("b1", "bet", bet="main", amount=100)
            assert again["result"] == first["result"]
            assert ledger_rows(s.store) == before  # nothing written
            other = await ws.command("b1", "bet", bet="main", amount=200)
            assert (other["type"], other["code"], other["status"]) == (
                "error",
                "idempotency-conflict",
                409,
            )
            assert ledger_rows(s.store) == before
            bad = await ws.command("x1", "bet", bet="main", amount=-5)
            assert (bad["code"], bad["status"]) == ("invalid-request", 422)
            sneaky = await ws.command("x2", "bet", bet="main", amount=100, session_id="other")
            assert (sneaky["code"], sneaky["status"]) == ("invalid-request", 422)
            assert ledger_rows(s.store) == before
            r = await ws.command("a1", "all-side-bets")
            assert set(r["result"]["bets"]) == {"main", "perfect-pairs", "21+3", "hot-3", "bust-it"}
            r = await ws.command("u1", "undo")
            assert "bust-it" not in r["result"]["bets"]
            r = await ws.command("d1", "double")
            assert r["result"]["bets"]["main"] == 200
            r = await ws.command("u2", "undo-all")
            assert r["result"]["bets"] == {}
            # no chip left: no bet, as a session that never bet (not seated)
            assert (r["result"]["status"], r["result"]["seated"]) == ("no-bet", False)
            unbet = ledger_rows(s.store)
            r = await ws.command("d2", "double")  # 2x with no bet: its own code, not an undo's
            assert (r["type"], r["status"], r["code"]) == ("error", 409, "nothing-to-double")
            assert ledger_rows(s.store) == unbet
            r = await ws.command("r1", "repeat")
            assert r["type"] == "error" and r["code"] == "repeat-not-allowed"
            r = await ws.command("b2", "bet", bet="main", amount=100)
            assert r["type"] == "answer"
            await asyncio.to_thread(s.live.tick, CONFIG["betting_ms"])
            dealt = await ws.until(lambda m: m["type"] == "options")
            offered = [o["decision"] for o in dealt["options"]]
            if "insure" in offered:
                r = await ws.command("i1", "insurance", take=False)
            elif offered:
                r = await ws.command("s1", "decide", step=dealt["step"], decision="stand")
            if offered:
                assert r["type"] == "answer", r
            r = await ws.command("l1", "leave")
            assert r["type"] == "answer"

    run(go())


def _numbers(value: Any) -> list[int]:
    """Every integer anywhere in a decoded message."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def test_a_socket_acts_and_reads_for_its_own_session_only(served: Served) -> None:
    """Authorization as on REST: a command names no session (one that tries is refused),
    the socket carries no other seat's messages, a spectator acts for nobody, and a closed
    session's socket is refused (by the ledger within the closed-session grace, at the
    handshake after it), nothing changed."""
    s = served
    ann, bob = s.live.player("ann"), s.live.player("bob")
    s.live.tick()

    async def go() -> None:
        async with _open(s, ann) as conn:
            ws = Socket(conn)
            await ws.until(lambda m: m["type"] == "round-opened")
            await asyncio.to_thread(s.live.bet, bob, "main", 777)
            mine = await ws.command("a1", "bet", bet="main", amount=100)
            assert mine["type"] == "answer"
            await asyncio.to_thread(s.live.tick, CONFIG["betting_ms"])
            await ws.until(lambda m: m["type"] == "options")
            text = "\n".join(ws.raw)
            assert bob not in text  # not bob's session or seat
            # nor bob's bet as any number in any message (a hex digest may hold "777")
            assert 777 not in [n for m in ws.messages for n in _numbers(m)]
            ticket, _ = s.creds.spectator_token("T1", 5)
            spectator = f"{s.ws}/T1/ws?access_token={ticket}"
            async with connect(spectator) as watching:
                watcher = Socket(watching)
                refused = await watcher.command("w1", "bet", bet="main", amount=100)
                assert (refused["code"], refused["status"]) == ("forbidden", 403)
        # ann's seat settles; then her session is closed by the operator
        for _ in range(8):
            await asyncio.to_thread(s.live.tick, 10_000)
        await asyncio.to_thread(s.live.app.close_session, "close-ann", ann)
        before = ledger_rows(s.store)
        async with _open(s, ann) as conn:
            late = await Socket(conn).command("a2", "bet", bet="main", amount=100)
            assert (late["code"], late["status"]) == ("session-closed", 409)
        assert ledger_rows(s.store) == before
        s.api.state.credentials = dataclasses.replace(s.api.state.credentials, closed_grace=-1)
        with pytest.raises(InvalidStatus) as e:
            async with _open(s, ann):
                pass
        assert e.value.response.status_code == 401

    run(go())


def test_the_session_command_rate_binds_on_the_socket_and_rest_together(store: Store) -> None:
    s = Served(store, session_commands_per_second=1)  # a burst of 2, then 1 a second
    try:
        ann = s.live.player("ann")
        s.live.tick()

        async def go() -> list[dict[str, Any]]:
            async with _open(s, ann) as conn:
                ws = Socket(conn)
                await ws.until(lambda m: m["type"] == "round-opened")
                return [await ws.command(f"r{i}", "join") for i in range(4)]

        answers = run(go())
        refused = [a for a in answers if a["type"] == "error"]
        assert refused and all(a["code"] == "too-many-commands" for a in refused)
        assert all(a["status"] == 429 and a["retry_after"] >= 1 for a in refused)
        url = f"/v1/sessions/{ann}/tables/T1/join"
        headers = {"Authorization": f"Bearer {s.token(ann)}", "Idempotency-Key": "rest-1"}
        assert s.client.post(url, headers=headers).status_code == 429  # the same bucket
    finally:
        s.stop()


def test_no_socket_message_carries_an_undealt_card_the_seed_or_another_seat(
    store: Store,
) -> None:
    """Mid-round (after the deal, and after step 1's card), every frame each socket got:
    no card not yet shown, no byte of the shoe's seed in any encoding, no other session
    (tests/integration/leak_scan.py's needles); the scan finds a planted leak."""
    live = SecretLive(store, config=dict(CONFIG))
    s = Served(store, live)
    try:
        ann, bob = live.player("ann"), live.player("bob")
        live.tick()
        cards = list(SHOE.cards)

        def scan_all(sockets: dict[str, Socket], hidden: list[Any]) -> list[str]:
            needles = {**card_needles(hidden), **seed_needles(SEED)}
            ids = {c.id: c for c in hidden}
            found: list[str] = []
            for who, ws in sockets.items():
                other = bob if who == ann else ann
                blob = "\n".join(ws.raw).encode()
                found += scan_bytes(f"{who}'s socket", blob, needles)
                found += [f"{other} in {who}'s socket"] if other.encode() in blob else []
                for m in ws.messages:
                    found += card_ids_in(f"{who}'s socket", m, ids)
            return found

        async def go() -> None:
            async with _open(s, ann) as a, _open(s, bob) as b:
                sockets = {ann: Socket(a), bob: Socket(b)}
                for ws in sockets.values():
                    await ws.until(lambda m: m["type"] == "round-opened")
                    r = await ws.command("m", "bet", bet="main", amount=100)
                    assert r["type"] == "answer", r
                await asyncio.to_thread(live.tick, CONFIG["betting_ms"])
                for ws in sockets.values():
                    await ws.until(lambda m: m["type"] == "options")
                # shown: the two player cards and the up card; the hole and the rest hidden
                assert scan_all(sockets, cards[3:]) == []
                planted = Socket(a)
                planted.raw = [json.dumps({"card": str(cards[4])})]
                assert scan_all({ann: planted}, cards[3:]) != []  # the scan can fail
                for ws in sockets.values():
                    step = await ws.command("h", "decide", step=1, decision="hit")
                    assert step["type"] == "answer", step
                await asyncio.to_thread(live.tick, CONFIG["step_ms"])
                for ws in sockets.values():
                    await ws.until(lambda m: m["type"] == "step-closed")
                # step 1's card (the fifth) is shown now; the hole and the rest are not
                assert scan_all(sockets, [cards[3], *cards[5:]]) == []

        run(go())
    finally:
        s.stop()
