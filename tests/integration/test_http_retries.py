"""Retries over HTTP: the Idempotency-Key makes every mutating request at most once.

The same deal sent 20 times at once (httpx async clients on the real app, the requests
running on the server's worker threads in parallel) yields one round and one debit, and
all 20 responses are the original one. A repeat returns the original response; the same
key with another body is a 409 and changes nothing; a missing key is a 400.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from api.app import create_app
from tests.conftest import Store
from tests.integration.test_http_e2e import (
    CREDENTIALS,
    OPERATOR,
    Api,
    api,  # the fixture, re-exported through __all__
    bearer,
    event_rows,
    rows_digest,
)

__all__ = ["api"]

STAKE_DEBITED = "croupier/session/stake-debited@1"
ROUND_STARTED = "croupier/round/started@1"
COPIES = 20
DEAL = {"coin_value": 50, "coins": 5, "lines": 4}


def count(store: Store, topic: str) -> int:
    return sum(1 for row in event_rows(store) if row[3] == topic)


async def send_at_once(
    app: Any, path: str, token: str, bodies_and_keys: list[tuple[dict[str, Any], str]]
) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://croupier") as client:
        return await asyncio.gather(
            *(
                client.post(path, json=body, headers={**bearer(token), "Idempotency-Key": key})
                for body, key in bodies_and_keys
            )
        )


def fund(store: Store) -> tuple[Any, str, str]:
    casino = store.open(**CREDENTIALS)
    app = create_app(casino)
    casino.open_account("open", "ann", "EUR")
    casino.deposit("deposit", "ann", 100_000)
    sid = casino.open_session("buy-in", "ann", 10_000).session_id
    return app, sid, app.state.credentials.session_token(sid)


def test_the_same_deal_sent_20_times_at_once_is_one_round_and_one_debit(store: Store) -> None:
    app, sid, token = fund(store)
    path = f"/v1/sessions/{sid}/video-poker/deal"

    responses = asyncio.run(send_at_once(app, path, token, [(DEAL, "deal-1")] * COPIES))

    assert [r.status_code for r in responses] == [200] * COPIES, [r.text for r in responses]
    first = responses[0].json()
    assert all(r.json() == first for r in responses)
    assert first["balance"] == 10_000 - 1_000
    assert count(store, ROUND_STARTED) == 1
    assert count(store, STAKE_DEBITED) == 1
    assert app.state.casino.session_balance(sid) == 9_000


def test_20_different_deals_at_once_open_exactly_one_round(store: Store) -> None:
    app, sid, token = fund(store)
    path = f"/v1/sessions/{sid}/video-poker/deal"
    requests = [(DEAL, f"deal-{i}") for i in range(COPIES)]

    responses = asyncio.run(send_at_once(app, path, token, requests))

    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * (COPIES - 1), [r.text for r in responses]
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"session-busy"}
    assert count(store, ROUND_STARTED) == 1 and count(store, STAKE_DEBITED) == 1


def test_a_repeat_returns_the_original_response_and_moves_nothing(api: Api) -> None:
    body = {"player_id": "ann", "currency": "EUR"}
    first = api.post_raw("/v1/accounts", OPERATOR, body, key="open-ann")
    api.post("/v1/accounts/ann/deposits", OPERATOR, {"amount": 5_000}, key="dep-1")
    opened = api.post_raw("/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 1_000}, key="s1")
    assert (first.status_code, opened.status_code) == (201, 201)
    sid, token = opened.json()["session_id"], opened.json()["token"]
    bet = api.post_raw(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100}, key="b1")
    before = rows_digest(api.store)

    again = [
        api.post_raw("/v1/accounts", OPERATOR, body, key="open-ann"),
        api.post_raw("/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 1_000}, key="s1"),
        api.post_raw(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100}, key="b1"),
    ]

    for original, repeat in zip([first, opened, bet], again, strict=True):
        assert (repeat.status_code, repeat.json()) == (original.status_code, original.json())
    assert rows_digest(api.store) == before
    assert api.get("/v1/accounts/ann", OPERATOR)["balance"] == 4_000


def test_the_same_key_with_another_body_is_a_409_and_changes_nothing(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    api.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100}, key="b1")
    api.post("/v1/accounts/ann/deposits", OPERATOR, {"amount": 100}, key="d1")
    before = rows_digest(api.store)
    for path, tok, body, key in [
        (f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 200}, "b1"),
        (f"/v1/sessions/{sid}/video-poker/deal", token, DEAL, "b1"),
        ("/v1/accounts/ann/deposits", OPERATOR, {"amount": 101}, "d1"),
        ("/v1/accounts/ann/withdrawals", OPERATOR, {"amount": 100}, "d1"),
    ]:
        r = api.post_raw(path, tok, body, key=key)
        assert (r.status_code, r.json()["code"]) == (409, "idempotency-conflict"), r.text
        assert r.json()["request_id"] == key
    assert rows_digest(api.store) == before


def test_a_mutating_request_without_an_idempotency_key_is_refused(api: Api) -> None:
    before = rows_digest(api.store)
    r = api.client.post(
        "/v1/accounts", json={"player_id": "ann", "currency": "EUR"}, headers=bearer(OPERATOR)
    )
    assert (r.status_code, r.json()["code"]) == (400, "idempotency-key-required")
    r = api.client.post(
        "/v1/accounts",
        json={"player_id": "ann", "currency": "EUR"},
        headers={**bearer(OPERATOR), "Idempotency-Key": "x" * 201},
    )
    assert (r.status_code, r.json()["code"]) == (422, "invalid-request")
    assert rows_digest(api.store) == before
