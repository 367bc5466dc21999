"""A game action builds its response itself (``api.game._answer``: no second worker-thread
hand-off): byte for byte what FastAPI makes of the same RoundView for
``response_model=RoundView`` from a sync endpoint, and the OpenAPI document still names
RoundView as the action's response."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from api.schemas import RoundView, round_view
from ledger import commands as c
from ledger.results import RoundPlayed
from tests.conftest import Store

OPERATOR = "answers-operator-token-0123456789abcdef"
AUDITOR = "answers-auditor-token-0123456789abcdef"


def _fastapi_bytes(result: RoundPlayed) -> bytes:
    """What FastAPI's own path (validate, then serialise) answers for this result."""
    plain = FastAPI()

    @plain.post("/x", response_model=RoundView)
    def x() -> RoundView:
        return round_view(result)

    with TestClient(plain) as client:
        return client.post("/x").content


def test_game_actions_answer_the_bytes_fastapi_would(store: Store) -> None:
    app = store.open()
    app.open_account("o", "ida", "EUR")
    app.deposit("d", "ida", 100_000)
    credentials = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
    api = create_app(app, store.settings(), credentials=credentials)
    with TestClient(api) as client:
        op = {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": "s"}
        opened = client.post(
            "/v1/sessions", headers=op, json={"player_id": "ida", "buy_in": 50_000}
        )
        sid, token = opened.json()["session_id"], opened.json()["token"]
        player = {"Authorization": f"Bearer {token}"}
        steps: list[tuple[str, dict[str, Any], c.Command[RoundPlayed]]] = [
            ("red-dog/bet", {"bet": 100}, c.RedDogBet(sid, 100)),
            (
                "video-poker/deal",
                {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 4},
                c.VideoPokerDeal(sid, "jb-4line", 10, 5, 4),
            ),
        ]
        for n, (path, body, cmd) in enumerate(steps):
            if path.startswith("video-poker") and n:
                # Red Dog's round may still be open: finish it first (see, or it settled).
                r = client.post(
                    f"/v1/sessions/{sid}/red-dog/see", headers={**player, "Idempotency-Key": "see"}
                )
                assert r.status_code in (200, 409), r.text
            key = f"k{n}"
            r = client.post(
                f"/v1/sessions/{sid}/{path}", headers={**player, "Idempotency-Key": key}, json=body
            )
            assert r.status_code == 200, r.text
            assert r.headers["content-type"] == "application/json"
            recorded = app.command(key, cmd)  # the same request again: its recorded result
            assert r.content == _fastapi_bytes(recorded)
        doc = client.get("/openapi.json").json()
        deal = doc["paths"]["/v1/sessions/{session_id}/video-poker/deal"]["post"]
        ref = deal["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/RoundView")
