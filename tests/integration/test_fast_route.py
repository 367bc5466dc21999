"""The game routes' lean handler (``api.fast_route``) answers as FastAPI's own would.

Valid game actions take the lean path (its count goes up); every malformed or refused
request (no or bad Idempotency-Key, a body that is not JSON, of the wrong type or
content type, missing, out of range, another session's path, a rule the game refuses)
gets, byte for byte, the answer FastAPI's handler gives the same request, and changes
nothing: each is sent twice, lean path on and off, and both answers compared.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api import fast_route
from api.app import create_app
from api.auth import Credentials
from tests.conftest import Store
from tests.helpers import cyclic_garbage

OPERATOR = "lean-operator-token-0123456789abcdef"
AUDITOR = "lean-auditor-token-0123456789abcdef"


def _served() -> int:
    return sum(plan.served for plan in fast_route.PLANS)


@pytest.fixture
def game(store: Store) -> Iterator[tuple[TestClient, str, str, Any]]:
    app = store.open()
    for player in ("lea", "max"):
        app.open_account(f"o-{player}", player, "EUR")
        app.deposit(f"d-{player}", player, 1_000_000)
    credentials = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
    api = create_app(app, store.settings(), credentials=credentials)
    with TestClient(api) as client:
        op = {"Authorization": f"Bearer {OPERATOR}"}
        tokens = []
        for player in ("lea", "max"):
            r = client.post(
                "/v1/sessions",
                headers={**op, "Idempotency-Key": f"s-{player}"},
                json={"player_id": player, "buy_in": 500_000},
            )
            tokens.append((r.json()["session_id"], r.json()["token"]))
        (sid, token), (other_sid, _) = tokens
        yield client, sid, token, other_sid


def _rows(client: TestClient) -> int:
    casino = client.app.state.casino  # type: ignore[attr-defined]
    return int(casino.recorder.max_notification_id() or 0)


def _both(client: TestClient, path: str, **kw: Any) -> tuple[int, bytes]:
    """The answer with the lean path off and on: the same, and nothing written."""
    before = _rows(client)
    answers = []
    for lean in (False, True):
        fast_route.LEAN = lean
        try:
            r = client.post(path, **kw)
        finally:
            fast_route.LEAN = True
        headers = {k: v for k, v in r.headers.items() if k not in ("x-request-id", "date")}
        answers.append((r.status_code, r.content, headers))
    assert answers[0] == answers[1], (path, kw, answers)
    assert _rows(client) == before, (path, kw)
    return answers[1][0], answers[1][1]


def test_valid_game_actions_take_the_lean_path(game: Any) -> None:
    client, sid, token, _ = game
    auth = {"Authorization": f"Bearer {token}"}
    before = _served()
    r = client.post(
        f"/v1/sessions/{sid}/red-dog/bet",
        headers={**auth, "Idempotency-Key": "b1"},
        json={"bet": 500},
    )
    assert r.status_code == 200, r.text
    if r.json()["status"] == "open":
        r = client.post(
            f"/v1/sessions/{sid}/red-dog/see", headers={**auth, "Idempotency-Key": "s1"}
        )
        assert r.status_code == 200, r.text
    deal = {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 4}
    r = client.post(
        f"/v1/sessions/{sid}/video-poker/deal", headers={**auth, "Idempotency-Key": "d1"}, json=deal
    )
    assert r.status_code == 200, r.text
    r = client.post(
        f"/v1/sessions/{sid}/video-poker/draw", headers={**auth, "Idempotency-Key": "h1"}
    )
    assert r.status_code == 200, r.text
    assert _served() - before >= 3
    # A retry answers the recorded response on the lean path too.
    again = client.post(
        f"/v1/sessions/{sid}/video-poker/draw", headers={**auth, "Idempotency-Key": "h1"}
    )
    assert again.status_code == 200 and again.content == r.content


def test_refused_requests_get_fastapis_answer_and_change_nothing(game: Any) -> None:
    client, sid, token, other_sid = game
    auth = {"Authorization": f"Bearer {token}"}
    bet = f"/v1/sessions/{sid}/red-dog/bet"
    key = {**auth, "Idempotency-Key": "k"}
    cases: list[tuple[str, dict[str, Any], int]] = [
        (bet, {"headers": auth, "json": {"bet": 500}}, 400),  # no Idempotency-Key
        (bet, {"headers": {**auth, "Idempotency-Key": "a b"}, "json": {"bet": 500}}, 422),
        (bet, {"headers": {**auth, "Idempotency-Key": "x" * 300}, "json": {"bet": 500}}, 422),
        (bet, {"headers": {**key, "Content-Type": "application/json"}, "content": b"{bad"}, 422),
        (bet, {"headers": {**key, "Content-Type": "application/json"}, "content": b"NaN"}, 422),
        (bet, {"headers": {**key, "Content-Type": "text/plain"}, "content": b'{"bet": 500}'}, 422),
        (bet, {"headers": key}, 422),  # no body
        (bet, {"headers": key, "json": {"bet": "many"}}, 422),
        (bet, {"headers": key, "json": {"bet": -5}}, 422),
        (bet, {"headers": key, "json": {"bet": 500, "extra": 1}}, 422),
        (bet, {"headers": key, "json": {"bet": 1}}, 422),  # below the table minimum
        (bet, {"headers": key, "json": {"bet": 10**20}}, 422),
        (f"/v1/sessions/{other_sid}/red-dog/bet", {"headers": key, "json": {"bet": 500}}, 403),
        (f"/v1/sessions/{uuid.uuid4()}/red-dog/see", {"headers": key}, 403),
        ("/v1/sessions/not-a-uuid/red-dog/see", {"headers": key}, 422),
        (f"/v1/sessions/{sid}/red-dog/see", {"headers": key}, 409),  # no open round
        (f"/v1/sessions/{sid}/video-poker/draw", {"headers": key, "json": {"holds": [9]}}, 422),
        (
            f"/v1/sessions/{sid}/video-poker/deal",
            {
                "headers": key,
                "json": {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 3},
            },
            422,
        ),
        (f"/v1/sessions/{sid}/games/no-such-game/start", {"headers": key, "json": {}}, 422),
    ]
    for path, kw, status in cases:
        got, body = _both(client, path, **kw)
        assert got == status, (path, kw, got, body)


def test_game_actions_leave_no_garbage_of_croupiers_for_the_collector(game: Any) -> None:
    """Red Dog rounds over the lean path free what croupier made for them by reference
    counting alone: a cycle per request (a command's future holding its pending record,
    which held the callback holding the future) left the cyclic collector thousands of
    objects a second under load, and its pauses were the open loop's request tail."""
    import asyncio

    client, sid, token, _ = game
    auth = {"Authorization": f"Bearer {token}"}

    def rounds(tag: str, n: int) -> None:
        for k in range(n):
            r = client.post(
                f"/v1/sessions/{sid}/red-dog/bet",
                headers={**auth, "Idempotency-Key": f"{tag}b{k}"},
                json={"bet": 100},
            )
            assert r.status_code == 200, r.text
            if r.json()["status"] == "open":
                r = client.post(
                    f"/v1/sessions/{sid}/red-dog/see",
                    headers={**auth, "Idempotency-Key": f"{tag}s{k}"},
                )
                assert r.status_code == 200, r.text

    rounds("warm", 5)  # what is made once (the writer thread, caches) is made
    served = _served()
    with cyclic_garbage() as garbage:
        rounds("count", 10)
    ours = sorted(
        {
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in garbage
            if type(o).__module__.split(".")[0] in ("api", "ledger", "games", "wallet")
            or isinstance(o, asyncio.Future)  # a command's answer (the test client's
            # own portal uses concurrent.futures, not these)
        }
    )
    assert _served() - served >= 10  # the rounds took the lean path
    assert ours == []
