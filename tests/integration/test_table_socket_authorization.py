"""Authorization on the table WebSocket as on REST (issue 28, Must show), both stores, over
real uvicorn on the runner's fake clock (tests/integration/test_table_socket.py's
``Served``): a session cannot act for another seat (a command naming any other session,
seat or player is refused and changes nothing), cannot read another player's seat (also
not by resuming from an old id: the log's replay is filtered as the live feed is), and
cannot act at a table once its session is closed (also on a socket it opened before the
close). Raw rows are compared; the rows a connection itself writes (where the session's
connection is held, ledger/presence.py) are left out of the comparison."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import CONFIG
from tests.integration.test_table_socket import Served, Socket, _open
from tests.integration.test_table_socket import served as served  # the fixture
from tests.integration.test_table_socket_e2e import BOOKKEEPING, _presence_request

SEAT_MESSAGES = {"seat-opened", "bet-accepted", "bet-undone", "bets-cancelled", "decided"}
SEAT_MESSAGES |= {"connection", "seat-settled", "seat-voided", "balance", "options"}


def rows(store: Store) -> list[tuple[Any, ...]]:
    """Every stored row but those of the connections' presence and the process's beat."""
    return [
        r
        for r in raw_rows(store)
        if not r[3].startswith(BOOKKEEPING) and not _presence_request(r[3], r[4])
    ]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_socket_command_naming_another_session_seat_or_player_is_refused(
    served: Served,
) -> None:
    s = served
    ann, bob = s.live.player("ann"), s.live.player("bob")
    s.live.tick()
    bob_seat = s.live.bet(bob, "main", 700)

    async def go() -> None:
        async with _open(s, ann) as conn:
            ws = Socket(conn)
            await ws.until(lambda m: m["type"] == "round-opened")
            before = rows(s.store)
            others = {
                "session_id": bob,
                "session": bob,
                "seat_id": str(bob_seat.seat_id),
                "seat": str(bob_seat.seat_id),
                "player_id": "bob",
                "player": "bob",
                "table": "T1",
            }
            for i, (field, value) in enumerate(others.items()):
                for command, body in (
                    ("bet", {"bet": "main", "amount": 100}),
                    ("undo-all", {}),
                    ("leave", {}),
                ):
                    r = await ws.command(f"x{i}{command}", command, **body, **{field: value})
                    assert (r["type"], r["status"], r["code"]) == (
                        "error",
                        422,
                        "invalid-request",
                    ), (field, command, r)
            assert rows(s.store) == before
            text = "\n".join(ws.raw)
            assert bob not in text and str(bob_seat.seat_id) not in text

    run(go())


def test_a_socket_resumed_from_an_old_id_replays_no_other_seat(served: Served) -> None:
    """Bob bets, decides and settles; then Ann's socket and a spectator's socket resume
    from the log's first position: the replay (read from the log, not the live buffer)
    carries the table's messages and, of the seats, only Ann's own (the spectator's: none)."""
    s = served
    ann, bob = s.live.player("ann"), s.live.player("bob")
    s.live.tick()
    bob_seat = s.live.bet(bob, "main", 700)
    s.live.bet(bob, "bust-it", 300)
    s.live.bet(ann, "main", 100)
    s.live.tick(CONFIG["betting_ms"])
    for _ in range(12):  # bob's decisions are left to the runner; ann's too
        s.live.tick(10_000)
    private = [bob, str(bob_seat.seat_id), '"bob"']

    async def resumed(url: str) -> Socket:
        from websockets.asyncio.client import connect

        async with connect(url) as conn:
            ws = Socket(conn)
            await ws.until(lambda m: m["type"] == "round-settled")
            return ws

    async def go() -> None:
        base = f"{s.ws}/T1/ws?last_event_id=1&access_token="
        mine = await resumed(base + s.token(ann))
        kinds = {m["type"] for m in mine.messages}
        assert {"bets-closed", "seat-settled", "balance"} <= kinds, kinds
        text = "\n".join(mine.raw)
        assert [x for x in private if x in text] == []
        # of the three chips placed, only ann's own one, and only her stake moved
        accepted = [m for m in mine.messages if m["type"] == "bet-accepted"]
        assert [(m["bet"], m["amount"]) for m in accepted] == [("main", 100)]
        stakes = [m for m in mine.messages if m["type"] == "balance" and m["movement"] == "stake"]
        assert [m["amount"] for m in stakes] == [100]
        ticket, _ = s.creds.spectator_token("T1", 5)
        watching = await resumed(base + ticket)
        assert not {m["type"] for m in watching.messages} & SEAT_MESSAGES
        text = "\n".join(watching.raw)
        assert [x for x in [*private, ann] if x in text] == []

    run(go())


def test_a_socket_open_before_its_session_closed_cannot_act_after_it(served: Served) -> None:
    """Ann's socket stays open while the operator closes her session: from then on each
    command on it is answered as the same REST call is: within the closed-session grace
    every command (a chip, UNDO, UNDO ALL, REPEAT, 2x, ALL SIDE BETS, insurance, a
    decision, join, leave) is ``session-closed`` (409), never a code about the table or
    the seat (2x used to say ``nothing-to-undo``, join and leave were accepted); after it
    every command is ``unauthenticated``. Nothing at all is written: no request record,
    no seat, no connection (raw rows compared)."""
    s = served
    ann = s.live.player("ann")
    s.live.tick()
    headers = {"Authorization": f"Bearer {s.token(ann)}"}
    later = [0.0]  # seconds the tokens' clock is ahead (the socket keeps these credentials)
    s.api.state.credentials = dataclasses.replace(
        s.api.state.credentials, clock=lambda: time.time() + later[0]
    )

    def rest(action: str, body: dict[str, Any], key: str) -> tuple[int, str]:
        url = f"/v1/sessions/{ann}/tables/T1/{action}"
        r = s.client.post(url, json=body, headers={**headers, "Idempotency-Key": key})
        return r.status_code, "" if r.status_code == 200 else r.json()["code"]

    async def go() -> None:
        async with _open(s, ann) as conn:
            ws = Socket(conn)
            await ws.until(lambda m: m["type"] == "round-opened")
            r = await ws.command("b1", "bet", bet="main", amount=100)
            assert r["type"] == "answer", r
            for _ in range(8):  # the round settles: the session may be closed
                await asyncio.to_thread(s.live.tick, 10_000)
            await ws.until(lambda m: m["type"] == "round-opened")
            await asyncio.to_thread(s.live.app.close_session, "close-ann", ann)
            before = rows(s.store)
            acts = {  # socket command: (REST action, body)
                "bet": ("bets", {"bet": "main", "amount": 100}),
                "undo": ("undo", {}),
                "undo-all": ("undo-all", {}),
                "repeat": ("repeat", {}),
                "double": ("double", {}),
                "all-side-bets": ("all-side-bets", {}),
                "insurance": ("insurance", {"take": True}),
                "decide": ("decide", {"step": 1, "decision": "stand"}),
                "join": ("join", {}),
                "leave": ("leave", {}),
            }
            for command, (action, body) in acts.items():
                r = await ws.command(f"in-grace-{command}", command, **body)
                got = (r.get("status", 200), r.get("code", ""))
                assert got == (409, "session-closed"), (command, r)
                assert rest(action, body, f"rest-{command}") == got, command
            assert rows(s.store) == before
            later[0] = s.api.state.credentials.closed_grace + 1.0
            for command, (action, body) in acts.items():
                r = await ws.command(f"after-grace-{command}", command, **body)
                got = (r.get("status", 200), r.get("code", ""))
                assert got == (401, "unauthenticated"), (command, r)
                assert rest(action, body, f"rest-after-{command}") == got
            assert rows(s.store) == before

    run(go())
