"""A player's table commands over REST: the games' lean front, and the table's intake.

- Valid table commands (``POST /v1/sessions/{id}/tables/{table}/...``) are answered by
  the game actions' front (:mod:`api.front`): its count goes up; every refused request
  (bad key, bad body, another session, a rule the table refuses) gets, byte for byte, the
  answer FastAPI's own handler gives it, and changes nothing (each is sent twice, the
  lean path off and on). A bet resent with its Idempotency-Key through FastAPI's handler
  answers the bytes the front answered first, and moves no money again.
- REST bets arriving together are applied in one batch of the table's intake
  (:mod:`api.table_intake`), as the table socket's are: the first batch is held until
  every other bet waits, so the rest must come as one second batch; each player is
  debited once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from api import fast_route, table_intake
from tests.integration.test_fast_route import _both as both_answers
from tests.integration.test_http_e2e import bearer
from tests.integration.test_http_tables import BUY_IN, CONFIG, Client, seat
from tests.integration.test_http_tables import client as client  # the fixture: a table T1


def _served() -> int:
    return sum(plan.served for plan in fast_route.PLANS)


def _balance(c: Client, sid: str, token: str) -> int:
    return int(c.get(seat(sid), token)["balance"])


def test_table_commands_take_the_lean_path_and_refusals_get_fastapis_answer(
    client: Client,
) -> None:
    c = client
    ann, token = c.player("ann")
    bob, _ = c.player("bob")
    c.tick()  # the betting window opens
    auth = bearer(token)
    bets = f"{seat(ann)}/bets"
    key = {**auth, "Idempotency-Key": "k"}
    main = {"bet": "main", "amount": 1_000}
    cases: list[tuple[str, dict[str, Any], int]] = [
        (bets, {"headers": auth, "json": main}, 400),  # no Idempotency-Key
        (bets, {"headers": {**auth, "Idempotency-Key": "a b"}, "json": main}, 422),
        (bets, {"headers": {**key, "Content-Type": "application/json"}, "content": b"{bad"}, 422),
        (bets, {"headers": {**key, "Content-Type": "text/plain"}, "content": b"{}"}, 422),
        (bets, {"headers": key}, 422),  # no body
        (bets, {"headers": key, "json": {"bet": "lucky-ladies", "amount": 100}}, 422),
        (bets, {"headers": key, "json": {"bet": "main", "amount": 99}}, 422),  # the minimum
        (bets, {"headers": key, "json": {"bet": "main", "amount": 30_000}}, 409),  # funds
        (bets, {"headers": key, "json": {"bet": "hot-3", "amount": 100}}, 409),  # no main
        (f"{seat(bob)}/bets", {"headers": key, "json": main}, 403),  # another's seat
        (f"/v1/sessions/{ann}/tables/T9/bets", {"headers": key, "json": main}, 404),
        (f"/v1/sessions/{ann}/tables/t%20x/bets", {"headers": key, "json": main}, 422),
        (f"{seat(ann)}/decide", {"headers": key, "json": {"step": 1, "decision": "hit"}}, 409),
        (f"{seat(ann)}/undo", {"headers": key}, 409),  # nothing to undo
        (f"{seat(ann)}/insurance", {"headers": key, "json": {"take": "maybe"}}, 422),
    ]
    for path, kw, status in cases:
        got, body = both_answers(c.http, path, **kw)
        assert got == status, (path, kw, got, body)

    before = _served()
    first = c.http.post(bets, headers={**auth, "Idempotency-Key": "b1"}, json=main)
    assert first.status_code == 200, first.text
    assert _served() == before + 1  # answered by the front
    assert first.json()["bets"] == {"main": 1_000}
    assert _balance(c, ann, token) == BUY_IN - 1_000
    # The same bet resent through FastAPI's handler: the first answer, byte for byte.
    before = _served()
    fast_route.LEAN = False
    try:
        again = c.http.post(bets, headers={**auth, "Idempotency-Key": "b1"}, json=main)
    finally:
        fast_route.LEAN = True
    assert _served() == before
    assert (again.status_code, again.content) == (200, first.content)
    assert _balance(c, ann, token) == BUY_IN - 1_000  # moved once
    # ... and on the front again, after the window has closed: still the first answer.
    c.tick(CONFIG["betting_ms"])
    late = c.http.post(bets, headers={**auth, "Idempotency-Key": "b1"}, json=main)
    assert (late.status_code, late.content) == (200, first.content)
    refused = c.http.post(bets, headers={**auth, "Idempotency-Key": "b2"}, json=main)
    assert (refused.status_code, refused.json()["code"]) == (409, "betting-closed")
    assert _balance(c, ann, token) == BUY_IN - 1_000


N = 12


def test_rest_bets_arriving_together_are_one_batch_of_the_tables_intake(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = client
    players = [c.player(f"p{i:02d}") for i in range(N)]
    c.tick()
    api = c.http.app
    real = table_intake.intake.apply
    sizes: list[int] = []
    first = threading.Event()

    def held(app: Any, items: Any) -> Any:
        """The first batch waits until every other bet is queued behind it."""
        if not first.is_set():
            first.set()
            queue = api.state.table_intake["T1"]  # type: ignore[attr-defined]
            deadline = time.monotonic() + 30
            while len(queue.waiting) < N - len(items) and time.monotonic() < deadline:
                time.sleep(0.01)
        sizes.append(len(items))
        return real(app, items)

    monkeypatch.setattr(table_intake.intake, "apply", held)

    async def bet_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            return list(
                await asyncio.gather(
                    *(
                        http.post(
                            f"{seat(sid)}/bets",
                            headers={**bearer(token), "Idempotency-Key": f"bet-{sid}"},
                            json={"bet": "main", "amount": 500},
                        )
                        for sid, token in players
                    )
                )
            )

    answers = asyncio.run(bet_all())
    assert [r.status_code for r in answers] == [200] * N, [r.text for r in answers]
    assert len(sizes) == 2 and sum(sizes) == N, sizes  # the first, then all the others
    assert [r.json()["bets"] for r in answers] == [{"main": 500}] * N
    for sid, token in players:
        assert _balance(c, sid, token) == BUY_IN - 500
