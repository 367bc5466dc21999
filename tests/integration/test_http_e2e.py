"""Whole game sessions over HTTP against the real app, on SQLite and PostgreSQL.

The operator opens and funds an account and a session; the game client plays Red Dog
(bet, raise, see, repeat) and Jacks or Better (4-line and multi-hand deals, draws with
the proposed holds, collect, double, half double, pick), reconnects mid-round, reads its
last 10 games; the operator closes the session with a round open, looks a round up by
its game code and voids one; the auditor reads checkpoints, proofs, the raw log and the
public keys. Every balance is checked against the responses' own stakes and payouts, and
the session ends with ``audit-cli verify`` passing on the same store with the keys the
API published.

The other ``test_http_*`` modules import the fixtures and the small client from here.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_cli
from audit_cli.rows import read_rows
from ledger import merkle
from ledger.casino import Casino
from tests.conftest import Store

OPERATOR = "operator-token-for-tests-0123456789"
AUDITOR = "auditor-token-for-tests-0123456789"
CREDENTIALS = {
    "operator_token": OPERATOR,
    "auditor_token": AUDITOR,
    "api_secret": "api-secret-for-tests-0123456789abcdef",
}
DEPOSIT = 1_000_000
BUY_IN = 200_000


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Api:
    """The real app behind httpx (Starlette's TestClient), with request-id bookkeeping."""

    def __init__(self, client: TestClient, casino: Casino, store: Store) -> None:
        self.client = client
        self.casino = casino
        self.store = store
        self._n = 0

    def key(self) -> str:
        self._n += 1
        return f"key-{self._n}"

    def post(
        self,
        path: str,
        token: str,
        body: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        expect: int = 200,
    ) -> dict[str, Any]:
        r = self.post_raw(path, token, body, key=key)
        assert r.status_code == expect, (path, r.status_code, r.text)
        doc: dict[str, Any] = r.json()
        return doc

    def post_raw(
        self, path: str, token: str, body: dict[str, Any] | None = None, *, key: str | None = None
    ) -> httpx.Response:
        headers = {**bearer(token), "Idempotency-Key": key or self.key()}
        return self.client.post(path, json=body, headers=headers)

    def get(
        self, path: str, token: str, *, expect: int = 200, params: dict[str, Any] | None = None
    ) -> Any:
        r = self.client.get(path, headers=bearer(token), params=params)
        assert r.status_code == expect, (path, r.status_code, r.text)
        return r.json()

    # -- the operator's side ---------------------------------------------------------------

    def new_player(self, player: str, deposit: int = DEPOSIT) -> None:
        self.post("/v1/accounts", OPERATOR, {"player_id": player, "currency": "EUR"}, expect=201)
        self.post(f"/v1/accounts/{player}/deposits", OPERATOR, {"amount": deposit})

    def new_session(self, player: str, buy_in: int = BUY_IN) -> tuple[str, str]:
        doc = self.post(
            "/v1/sessions", OPERATOR, {"player_id": player, "buy_in": buy_in}, expect=201
        )
        return doc["session_id"], doc["token"]


@pytest.fixture
def api(store: Store) -> Iterator[Api]:
    casino = store.open(**CREDENTIALS)
    with TestClient(create_app(casino)) as client:
        yield Api(client, casino, store)


def event_rows(store: Store) -> list[tuple[Any, ...]]:
    """Every raw stored row, read without the application."""
    return [
        (r.notification_id, r.originator_id, r.version, r.topic, r.state)
        for r in read_rows(store.db)
    ]


def rows_digest(store: Store) -> str:
    h = hashlib.sha256()
    for row in event_rows(store):
        h.update(repr(row).encode())
    return h.hexdigest()


class Player:
    """A game client: its session, token, and the balance it expects from the responses."""

    def __init__(self, api: Api, session_id: str, token: str, balance: int) -> None:
        self.api = api
        self.sid = session_id
        self.token = token
        self.balance = balance
        self.codes: list[str] = []

    def act(self, action: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        r = self.api.post(f"/v1/sessions/{self.sid}/{action}", self.token, body)
        if not self.codes or self.codes[-1] != r["code"]:
            self.codes.append(r["code"])
        if r["status"] == "open":
            assert r["seed"] is None, "the seed shows before the round ended"
        else:
            assert hashlib.sha256(bytes.fromhex(r["seed"])).hexdigest() == r["commitment"]
        return r

    def settle(self, r: dict[str, Any]) -> None:
        """Book a settled round: its stakes out, its payout in."""
        assert r["status"] == "settled"
        self.balance += r["payout"] - r["staked"]
        assert r["balance"] == self.balance, r


def play_red_dog(p: Player, rounds: int) -> dict[str, int]:
    seen = {"raise": 0, "see": 0, "repeat": 0, "instant": 0}
    last: dict[str, Any] | None = None
    for i in range(rounds):
        if i % 3 == 2 and last is not None:
            r = p.act("red-dog/repeat")
            seen["repeat"] += 1
            assert r["stake"] == last["stake"]
        else:
            r = p.act("red-dog/bet", {"bet": 100 * (1 + i % 4)})
        if r["status"] == "open":
            assert r["balance"] == p.balance - r["stake"]
        if r["status"] == "open":
            assert r["view"]["phase"] == "decide" and len(r["view"]["cards"]) == 2
            if r["view"]["spread"] >= 7 and r["view"]["max_raise"] > 0:
                r = p.act("red-dog/raise", {"amount": r["view"]["max_raise"]})
                seen["raise"] += 1
            else:
                r = p.act("red-dog/see")
                seen["see"] += 1
            assert len(r["view"]["cards"]) == 3
        else:
            seen["instant"] += 1
        p.settle(r)
        last = r
    return seen


def play_video_poker(p: Player, rounds: int) -> dict[str, int]:
    """4-line rounds with the proposed holds; on a win, collect, double or half double in
    turn, picking the first face-down card."""
    seen = {"collect": 0, "double": 0, "half-double": 0, "pick": 0, "multi": 0}
    for i in range(rounds):
        multi = i % 5 == 4
        deal = {"coin_value": 10, "coins": 1 + i % 5, "lines": 4, "variant": "jb-4line"}
        if multi:
            deal.update(variant="jb-multi", lines=3)
            seen["multi"] += 1
        r = p.act("video-poker/deal", deal)
        stake = deal["coin_value"] * deal["coins"] * deal["lines"]
        assert r["stake"] == stake and r["balance"] == p.balance - stake
        assert r["view"]["phase"] == "dealt" and len(r["view"]["dealt"]) == 5
        r = p.act("video-poker/draw", {"holds": r["view"]["recommended"]})
        assert len(r["view"]["lines"]) == deal["lines"]
        assert r["view"]["line_win"] == sum(ln["win"] for ln in r["view"]["lines"])
        choice = 0
        while r["status"] == "open":
            phase = r["view"]["phase"]
            if phase == "win-pending":
                action = ("collect", "double", "half-double")[(i + choice) % 3]
                if multi or (action == "half-double" and r["view"]["win"] < 2):
                    action = "collect"  # seed 004 has no double-up
                choice += 1
                r = p.act(f"video-poker/{action}")
                seen[action] += 1
            else:
                assert phase == "double-pick"
                step = r["view"]["double_up"][-1]
                assert step["cards"] == [] and step["index"] is None  # face down
                r = p.act("video-poker/pick", {"index": choice % 4})
                seen["pick"] += 1
        p.settle(r)
    return seen


def test_a_whole_session_of_both_games_over_http_ends_with_audit_cli_verify_passing(
    api: Api, tmp_path: Path
) -> None:
    catalogue = api.get("/v1/games", OPERATOR)
    assert {v["id"] for v in catalogue["video_poker"]} == {"jb-4line", "jb-multi"}
    red_dog = catalogue["red_dog"][0]
    assert any(f["percent"].startswith("96.84") and f["certified"] for f in red_dog["rtp"])
    jb = catalogue["video_poker"][0]
    assert {f["coins"]: f["percent"][:5] for f in jb["rtp"] if f["certified"]} == {
        1: "98.37",
        2: "98.37",
        3: "98.37",
        4: "98.37",
        5: "99.54",
    }

    api.new_player("ann")
    sid, token = api.new_session("ann")
    assert api.get("/v1/accounts/ann", OPERATOR)["balance"] == DEPOSIT - BUY_IN
    p = Player(api, sid, token, BUY_IN)
    assert api.get("/v1/games", token) == catalogue

    rd = play_red_dog(p, 18)
    vp = play_video_poker(p, 30)
    assert rd["see"] + rd["raise"] > 0 and rd["repeat"] == 6
    assert vp["collect"] and vp["double"] and vp["half-double"] and vp["pick"] and vp["multi"]

    # Reconnect mid-round: the open round comes back exactly as last shown.
    dealt = p.act("video-poker/deal", {"coin_value": 20, "coins": 5, "lines": 4})
    resumed = api.get(f"/v1/sessions/{sid}/round", token)
    assert resumed["round"] == dealt and resumed["balance"] == dealt["balance"]
    assert api.get(f"/v1/sessions/{sid}", token)["open_round"] == dealt["code"]

    recall = api.get(f"/v1/sessions/{sid}/history", token)["games"]
    assert [g["code"] for g in recall] == list(reversed(p.codes))[:10]
    assert recall[0]["status"] == "open" and all(g["session_id"] == sid for g in recall)

    # The operator closes with the round open: its default action completes it.
    closed = api.post(f"/v1/sessions/{sid}/close", OPERATOR)
    finished = api.get(f"/v1/rounds/{dealt['code']}", OPERATOR)
    assert finished["status"] == "settled" and finished["steps"][-1]["step"] == "settled"
    assert any(s["data"].get("automatic") for s in finished["steps"] if s["step"] == "acted")
    assert closed["final_balance"] == p.balance - finished["staked"] + finished["payout"]
    account = DEPOSIT - BUY_IN + closed["final_balance"]
    assert closed["account_balance"] == account
    assert api.get(f"/v1/sessions/{sid}", token)["status"] == "closed"
    r = api.post_raw(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
    assert (r.status_code, r.json()["code"]) == (409, "session-closed")

    # A dispute: the operator finds a round that paid by its code and voids it.
    played = api.get("/v1/accounts/ann/history", OPERATOR, params={"limit": 1000})["games"]
    won = next(g for g in played if g["wins"] > 0 and g["status"] == "settled")
    detail = api.get(f"/v1/rounds/{won['code'].lower()}", OPERATOR)
    assert detail["code"] == won["code"] and detail["steps"][0]["step"] == "started"
    void = {"reason": "display fault", "incident_id": "INC-1"}
    voided = api.post(f"/v1/rounds/{won['code']}/void", OPERATOR, void, key="void-1")
    assert voided["status"] == "voided" and voided["already_voided"] is False
    account += detail["staked"] - detail["payout"]
    assert api.get("/v1/accounts/ann", OPERATOR)["balance"] == account
    again = api.post(f"/v1/rounds/{won['code']}/void", OPERATOR, void, key="void-2")
    assert again["already_voided"] is True
    assert api.get("/v1/accounts/ann", OPERATOR)["balance"] == account

    history = api.get("/v1/accounts/ann/history", OPERATOR, params={"limit": 1000})["games"]
    assert [g["code"] for g in history] == list(reversed(p.codes))
    assert next(g for g in history if g["code"] == won["code"])["status"] == "voided"

    assert_auditor_sees_a_consistent_log(api, p.codes[0])

    keys = tmp_path / "public-keys.json"
    keys.write_text(json.dumps(api.get("/v1/audit/keys", AUDITOR)))
    api.casino.seal()
    # The keys document names the log's genesis key: pin it (issue 11).
    assert json.loads(keys.read_text())["genesis"]["fingerprint"].startswith("SHA256:")
    verify_args = ["verify", "--db", api.store.db, "--keys", str(keys), "--pin", str(keys)]
    assert audit_cli([*verify_args, "--jobs", "1"]) == 0


def assert_auditor_sees_a_consistent_log(api: Api, code: str) -> None:
    first = api.casino.seal()
    assert first is not None
    api.post("/v1/accounts/ann/deposits", OPERATOR, {"amount": 1})
    latest = api.casino.seal()
    assert latest is not None

    head = api.get("/v1/audit/checkpoints/latest", AUDITOR)
    # The API adds the log id the head is signed under (format 2) to the sealed view.
    assert head.pop("log_id") == api.casino.key_history.log_id.hex()
    assert head == latest
    first_head = api.get(f"/v1/audit/checkpoints/{first['seq']}", AUDITOR)
    assert first_head.pop("log_id") == api.casino.key_history.log_id.hex()
    assert first_head == first

    proof = api.get(f"/v1/audit/rounds/{code}/inclusion", AUDITOR)
    assert proof["checkpoint"].pop("log_id") == api.casino.key_history.log_id.hex()
    assert proof["checkpoint"] == head and len(proof["events"]) >= 2
    root = bytes.fromhex(head["root_hash"])
    for e in proof["events"]:
        path = [bytes.fromhex(h) for h in e["proof"]]
        leaf = bytes.fromhex(e["leaf_hash"])
        assert merkle.verify_inclusion(leaf, e["leaf_index"], head["tree_size"], path, root)

    params = {"old": first["seq"], "new": head["seq"]}
    c = api.get("/v1/audit/consistency", AUDITOR, params=params)
    assert merkle.verify_consistency(
        first["tree_size"],
        head["tree_size"],
        bytes.fromhex(first["root_hash"]),
        root,
        [bytes.fromhex(h) for h in c["proof"]],
    )

    r = api.client.get("/v1/audit/events", headers=bearer(AUDITOR), params={"limit": 10_000})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    rows = event_rows(api.store)
    assert [(d["notification_id"], base64.b64decode(d["state_b64"])) for d in lines] == [
        (row[0], row[4]) for row in rows
    ]
    after = lines[-3]["notification_id"]
    tail = api.client.get(
        "/v1/audit/events", headers=bearer(AUDITOR), params={"after": after}
    ).text.splitlines()
    assert [json.loads(line)["notification_id"] for line in tail] == [
        d["notification_id"] for d in lines[-2:]
    ]
