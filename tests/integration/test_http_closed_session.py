"""The closed-session check of a game action runs inside its command (issue 14: no read of
its own): as strict as the separate check it replaced. A token of a session closed for
longer than the grace is refused (401) before the command runs or its request id is
looked up, in a batch with other commands that commit, and when another worker closed
the session that this worker still holds open in its cache."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from ledger import commands as c
from ledger.requests import Request, request_aggregate_id
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.test_group_commit import writer_held

OPERATOR = "closed-operator-token-0123456789abcdef"
AUDITOR = "closed-auditor-token-0123456789abcdef"
DEAL = {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 4}
GRACE = 300


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _credentials(clock: Clock) -> Credentials:
    return Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test", 3600, clock, GRACE)


def _op(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": key}


def _session(client: TestClient, player: str) -> tuple[str, dict[str, str]]:
    assert client.post(
        "/v1/accounts", headers=_op(f"a-{player}"), json={"player_id": player, "currency": "EUR"}
    ).status_code in (200, 201)
    funded = client.post(
        f"/v1/accounts/{player}/deposits", headers=_op(f"d-{player}"), json={"amount": 100_000}
    )
    assert funded.status_code == 200, funded.text
    opened = client.post(
        "/v1/sessions", headers=_op(f"s-{player}"), json={"player_id": player, "buy_in": 50_000}
    )
    assert opened.status_code in (200, 201), opened.text
    return opened.json()["session_id"], {"Authorization": f"Bearer {opened.json()['token']}"}


def _deal(client: TestClient, sid: str, token: dict[str, str], key: str) -> Any:
    return client.post(
        f"/v1/sessions/{sid}/video-poker/deal", headers={**token, "Idempotency-Key": key}, json=DEAL
    )


def _refused_as_closed(r: Any) -> bool:
    body = r.json()
    return bool(r.status_code == 401 and body["code"] == "unauthenticated") and (
        "closed" in body["message"]
    )


def _recorded(app: Any, sid: str, key: str) -> bool:
    scope = c.VideoPokerDeal(sid, "jb-4line", 10, 5, 4).scope
    return app.find(Request, request_aggregate_id(scope, key)) is not None


def test_a_closed_session_refuses_game_actions_in_their_batch_and_the_others_commit(
    store: Store,
) -> None:
    clock = Clock()
    app = store.open()
    api = create_app(app, store.settings(), credentials=_credentials(clock))
    with TestClient(api) as client:
        ann, ann_token = _session(client, "ann")
        bob, bob_token = _session(client, "bob")
        first = _deal(client, ann, ann_token, "d1")
        assert first.status_code == 200, first.text
        closed = client.post(f"/v1/sessions/{ann}/close", headers=_op("c-ann"))
        assert closed.status_code == 200, closed.text
        # Within the grace the token still passes: the ledger refuses the action, and a
        # retry of the recorded request gets its original answer.
        clock.now = time.time()
        r = _deal(client, ann, ann_token, "d2")
        assert (r.status_code, r.json()["code"]) == (409, "session-closed")
        assert _deal(client, ann, ann_token, "d1").json() == first.json()

        clock.now += GRACE + 1
        before, batches = raw_rows(store), app.batches
        with writer_held(app) as submit:
            submit(lambda: _deal(client, ann, ann_token, "d3"))
            submit(lambda: _deal(client, ann, ann_token, "d1"))  # recorded: refused too
            outcomes = submit(lambda: _deal(client, bob, bob_token, "b1"))
        assert app.batches == batches + 1  # the three in one batch
        assert _refused_as_closed(outcomes[0]) and _refused_as_closed(outcomes[1])
        assert outcomes[2].status_code == 200, outcomes[2].text
        after = raw_rows(store)
        assert after[: len(before)] == before
        assert all(row[1] != ann for row in after[len(before) :])  # nothing on ann's session
        assert not _recorded(app, ann, "d3") and _recorded(app, bob, "b1")
        # Alone (a batch of one) and on the careful path, the same answer.
        assert _refused_as_closed(_deal(client, ann, ann_token, "d4"))
        assert raw_rows(store) == after


def test_a_session_another_worker_closed_is_refused_though_this_worker_holds_it_open(
    store: Store,
) -> None:
    clock = Clock()
    here, other = store.open(), store.open()
    api = create_app(here, store.settings(), credentials=_credentials(clock))
    with TestClient(api) as client:
        sid, token = _session(client, "cy")
        dealt = _deal(client, sid, token, "d1")
        assert dealt.status_code == 200, dealt.text
        cached = here.repository.cache
        assert cached is not None and cached.get(here.get_session(sid).id).closed is False
        other.close_session("c-cy", sid)  # the other worker: this one's cache says open
        clock.now = time.time() + GRACE + 1
        before = raw_rows(store)
        # A command that would change the session (its insert collides), one the game
        # refuses without changing anything (the batch's staleness check), and a new deal.
        draw = client.post(
            f"/v1/sessions/{sid}/video-poker/draw",
            headers={**token, "Idempotency-Key": "d2"},
            json={},
        )
        assert _refused_as_closed(draw), draw.text
        double = client.post(
            f"/v1/sessions/{sid}/video-poker/pick",
            headers={**token, "Idempotency-Key": "d3"},
            json={"index": 0},
        )
        assert _refused_as_closed(double), double.text
        assert _refused_as_closed(_deal(client, sid, token, "d4"))
        assert raw_rows(store) == before
