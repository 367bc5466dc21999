"""The hold step: the player's selection is its own event before the draw, moves nothing,
and a draw without holds uses it (else the game's proposal)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.rounds import check_round
from games.errors import GameRuleError
from ledger.casino import Casino
from ledger.errors import InvalidRequest, RoundNotOpen
from tests.conftest import Store
from tests.helpers import assert_refused, raw_rows

CREDENTIALS: dict[str, Any] = {
    "operator_token": "operator-token-for-hold-tests",
    "auditor_token": "auditor-token-for-hold-tests",
    "api_secret": "api-secret-for-hold-tests-0123456789abcdef",
}


def new_session(app: Casino) -> str:
    app.open_account("open", "hal", "EUR")
    app.deposit("deposit", "hal", 100_000)
    return str(app.open_session("buy-in", "hal", 50_000).session_id)


def test_a_hold_is_recorded_as_its_own_step_and_moves_no_money(store: Store, app: Casino) -> None:
    sid = new_session(app)
    dealt = app.vp_deal("deal", sid, "jb-4line", 10, 1, 4)
    balance = dealt.balance
    held = app.vp_act("hold", sid, ["hold", [4, 0]])
    assert held.status == "open" and held.balance == balance
    assert held.view["dealt"] == dealt.view["dealt"]
    drawn = app.vp_act("draw", sid, ["draw"])  # no holds: uses the hold step
    for line in drawn.view["lines"]:
        assert line["cards"][0] == dealt.view["dealt"][0]
        assert line["cards"][4] == dealt.view["dealt"][4]
    decisions = [t["decision"] for t in app.history.timeline(dealt.code) if "decision" in t]
    assert decisions[:2] == [["hold", [4, 0]], ["draw", [0, 4]]]
    if drawn.status == "open":
        app.vp_act("collect", sid, ["collect"])
    assert check_round(store.db, dealt.code).ok


def test_a_draw_without_holds_and_no_hold_step_uses_the_proposal(app: Casino) -> None:
    sid = new_session(app)
    dealt = app.vp_deal("deal", sid, "jb-multi", 10, 1, 3)
    drawn = app.vp_act("draw", sid, ["draw"])
    assert drawn.view["holds"] == dealt.view["recommended"]


def test_a_bad_hold_is_refused_and_changes_nothing(store: Store, app: Casino) -> None:
    sid = new_session(app)
    app.vp_deal("deal", sid, "jb-4line", 10, 1, 4)
    for n, bad in enumerate((["hold", [5]], ["hold", [1, 1]], ["hold"], ["hold", "x"])):
        assert_refused(store, GameRuleError, app.vp_act, f"bad-{n}", sid, bad)
    app.vp_act("draw", sid, ["draw", []])
    before = raw_rows(store)
    # After the draw: out of phase if the draw won, round-not-open if it settled the round.
    with pytest.raises((GameRuleError, InvalidRequest, RoundNotOpen)):
        app.vp_act("late-hold", sid, ["hold", [0]])
    assert raw_rows(store) == before


def test_hold_over_http(store: Store) -> None:
    casino = store.open(**CREDENTIALS)
    op = {"Authorization": f"Bearer {CREDENTIALS['operator_token']}"}
    with TestClient(create_app(casino)) as client:
        client.post(
            "/v1/accounts",
            json={"player_id": "hal", "currency": "EUR"},
            headers={**op, "Idempotency-Key": "a"},
        )
        client.post(
            "/v1/accounts/hal/deposits",
            json={"amount": 10_000},
            headers={**op, "Idempotency-Key": "b"},
        )
        s = client.post(
            "/v1/sessions",
            json={"player_id": "hal", "buy_in": 5_000},
            headers={**op, "Idempotency-Key": "c"},
        ).json()
        me = {"Authorization": f"Bearer {s['token']}"}
        base = f"/v1/sessions/{s['session_id']}/video-poker"
        dealt = client.post(
            f"{base}/deal",
            json={"variant": "jb-4line", "coin_value": 10, "coins": 1, "lines": 4},
            headers={**me, "Idempotency-Key": "d"},
        ).json()
        r = client.post(f"{base}/hold", json={"holds": [2]}, headers={**me, "Idempotency-Key": "h"})
        assert r.status_code == 200, r.text
        r = client.post(f"{base}/draw", json={}, headers={**me, "Idempotency-Key": "w"})
        assert r.status_code == 200, r.text
        assert all(
            line["cards"][2] == dealt["view"]["dealt"][2] for line in r.json()["view"]["lines"]
        )
