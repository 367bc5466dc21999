"""Infinite Blackjack over HTTP with a fake clock (the runner ticked by the test).

A whole round through the real app: the operator creates the table; two game clients
join and bet (main, all side bets), see the deal, take insurance or not, hit, cash out and
stand; the runner closes each window; the result shows with the next round's state; the
operator looks the round up by its game code and the auditor gets the shoe's commitment
and the round's inclusion proofs. Every response is checked for cards the round has not
shown and for the shoe's seed. Then: who may do what (a session never acts on another's
seat, the auditor never writes, a player never pauses or voids) and bad input (typed
errors, the stored rows unchanged), the player's settings on two devices, and the
catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_cli
from games.blackjack import Shoe
from ledger import merkle
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import FakeClock
from tests.integration.test_http_e2e import AUDITOR, CREDENTIALS, OPERATOR, bearer

# Player 9-7 (both seats share them), dealer ace up (insurance), hole 6 (no blackjack);
# step 1's card 2h; the dealer stands on soft 17. The rest never comes out.
SHOE = Shoe.of("9c Ad 7d 6s 2h 5c 3d 4s 8h Tc Qd Kh 2c 3h 4d 5s 6h 7c 8d 9s Js Qs Ks")
CONFIG = {"betting_ms": 10_000, "insurance_ms": 5_000, "step_ms": 5_000, "grace_ms": 0}
BUY_IN = 20_000
CARD = re.compile(r"^(?:[2-9TJQKA])[cdhs]$")


def cards_in(doc: Any) -> set[str]:
    """Every string in a JSON document that is a card."""
    if isinstance(doc, dict):
        return set().union(*(cards_in(v) for v in doc.values())) if doc else set()
    if isinstance(doc, list):
        return set().union(*(cards_in(v) for v in doc)) if doc else set()
    return {doc} if isinstance(doc, str) and CARD.match(doc) else set()


class Client:
    """The app behind TestClient, a fake clock and the table's runner."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = FakeClock()
        self.casino: Casino = bootstrap(
            store.settings(**CREDENTIALS),
            store.keyring,
            clock=self.clock,
            shoe_maker=lambda rules, seed: SHOE,
        )
        store.apps.append(self.casino)
        self.http = TestClient(create_app(self.casino))
        self.runner = TableRunner(self.casino, "T1", self.clock)
        self.n = 0
        self.shown: set[str] = set()
        self.seen: list[Any] = []

    def key(self) -> str:
        self.n += 1
        return f"k{self.n}"

    def post(self, path: str, token: str, body: Any = None, status: int = 200) -> Any:
        r = self.http.post(
            path, json=body, headers={**bearer(token), "Idempotency-Key": self.key()}
        )
        assert r.status_code == status, (path, r.status_code, r.text)
        self.seen.append(r.json())
        return r.json()

    def get(self, path: str, token: str, status: int = 200) -> Any:
        r = self.http.get(path, headers=bearer(token))
        assert r.status_code == status, (path, r.status_code, r.text)
        self.seen.append(r.json())
        return r.json()

    def player(self, name: str) -> tuple[str, str]:
        self.post("/v1/accounts", OPERATOR, {"player_id": name, "currency": "EUR"}, 201)
        self.post(f"/v1/accounts/{name}/deposits", OPERATOR, {"amount": 100_000})
        s = self.post("/v1/sessions", OPERATOR, {"player_id": name, "buy_in": BUY_IN}, 201)
        return s["session_id"], s["token"]

    def tick(self, ms: int = 0) -> list[str]:
        return self.runner.tick(self.clock.advance(ms))

    def no_unshown_cards(self) -> None:
        """No response so far carried a card the table had not shown by then."""
        for doc in self.seen:
            assert cards_in(doc) <= self.shown, (cards_in(doc) - self.shown, doc)
        self.seen.clear()


@pytest.fixture
def client(store: Store) -> Iterator[Client]:
    c = Client(store)
    with c.http:
        c.post("/v1/tables", OPERATOR, {"table": "T1", "currency": "EUR", "config": CONFIG}, 201)
        yield c


def seat(sid: str) -> str:
    return f"/v1/sessions/{sid}/tables/T1"


def test_a_whole_round_over_http_bets_deal_decisions_and_settlement(
    client: Client, store: Store
) -> None:
    c = client
    ann, ann_token = c.player("ann")
    bob, bob_token = c.player("bob")
    c.tick()  # round 1 opens its betting window
    c.post(f"{seat(ann)}/join", ann_token)
    c.post(f"{seat(ann)}/bets", ann_token, {"bet": "main", "amount": 1_000})
    c.post(f"{seat(ann)}/all-side-bets", ann_token)
    c.post(f"{seat(bob)}/bets", bob_token, {"bet": "main", "amount": 1_000})
    state = c.get(seat(ann), ann_token)
    assert state["round"]["phase"] == "betting"
    assert state["round"]["deadline"] == "2026-12-01T12:00:10.000+00:00"
    assert state["seat"]["bets"] == {
        "main": 1_000,
        "perfect-pairs": 100,
        "21+3": 100,
        "hot-3": 100,
        "bust-it": 100,
    }
    assert state["balance"] == BUY_IN - 1_400 and state["options"] == []
    code = state["round"]["code"]
    c.no_unshown_cards()

    c.tick(10_000)  # the deal: 9c 7d for every seat, the ace up
    c.shown |= {"9c", "Ad", "7d"}
    state = c.get(seat(ann), ann_token)
    assert state["round"]["phase"] == "insurance" and state["round"]["step"] == 0
    assert state["round"]["cards"]["player"] == ["9c", "7d"]
    assert state["round"]["cards"]["dealer"] == ["Ad"]
    assert [o["decision"] for o in state["options"]] == ["insure", "no-insurance"]
    assert state["options"][0]["amount"] == 500
    assert {s["decision"] for s in state["statistics"]} == {"insure", "no-insurance"}
    c.post(f"{seat(ann)}/insurance", ann_token, {"take": True})
    c.post(f"{seat(bob)}/insurance", bob_token, {"take": False})
    # seed 002's real-time statistics: bob sees what the table chose in his situation
    c.tick()  # everyone answered: the dealer peeks (no blackjack), step 1 opens
    state = c.get(seat(bob), bob_token)
    assert state["round"]["phase"] == "step" and state["round"]["step"] == 1
    offered = {o["decision"]: o["amount"] for o in state["options"]}
    assert set(offered) == {"hit", "stand", "double", "cash-out"}
    cash_out = offered["cash-out"]
    assert 400 <= cash_out <= 1_770  # seed 002: 0.40-1.77 x the bet
    c.post(f"{seat(ann)}/decide", ann_token, {"step": 1, "decision": "hit"})
    stats = c.get(seat(bob), bob_token)["statistics"]
    assert {s["decision"]: s["players"] for s in stats}["hit"] == 1  # ann's choice
    out = c.post(f"{seat(bob)}/decide", bob_token, {"step": 1, "decision": "cash-out"})
    assert out["applied"] == "cash-out" and out["balance"] == BUY_IN - 1_000 + cash_out
    c.no_unshown_cards()

    c.tick()  # step 1 closes early; its card 2h goes to ann's hand (18)
    c.shown.add("2h")
    state = c.get(seat(ann), ann_token)
    assert state["round"]["step"] == 2
    assert state["seat"]["hands"][0]["cards"] == ["9c", "7d", "2h"]
    assert state["seat"]["hands"][0]["total"] == 18
    assert "hit" not in {o["decision"] for o in state["options"]}  # hard 17+: no hit
    c.post(f"{seat(ann)}/decide", ann_token, {"step": 2, "decision": "stand"})
    c.no_unshown_cards()

    c.tick()  # the dealer shows 6s (soft 17, stands), seats settle, round 2 opens
    c.shown.add("6s")
    state = c.get(seat(ann), ann_token)
    assert state["round"]["number"] == 2 and state["round"]["phase"] == "betting"
    previous = state["previous"]
    assert previous["code"] == code and previous["status"] == "settled"
    # main 1000 wins 1:1; insurance 500 lost; the four side bets lost
    assert previous["result"]["staked"] == 1_900 and previous["result"]["returned"] == 2_000
    assert state["balance"] == BUY_IN - 1_900 + 2_000
    assert c.get(seat(bob), bob_token)["balance"] == BUY_IN - 1_000 + cash_out

    detail = c.get(f"/v1/table-rounds/{code}", OPERATOR)
    assert [p[0] for p in detail["phases"]] == [
        "betting",
        "insurance",
        "step-1",
        "step-2",
        "dealer",
        "settling",
        "settled",
    ]
    assert detail["dealer_cards"] == ["Ad", "6s"] and detail["shoe_seed"] is None
    paid = {s["player_id"]: (s["staked"], s["paid"]) for s in detail["seat_list"]}
    assert paid == {"ann": (1_900, 2_000), "bob": (1_000, cash_out)}
    shoes = c.get("/v1/audit/tables/T1/shoes", AUDITOR)["shoes"]
    assert len(shoes) == 1 and shoes[0]["seed"] is None and len(shoes[0]["commitment"]) == 64
    c.no_unshown_cards()

    c.casino.seal()
    proof = c.get(f"/v1/audit/table-rounds/{code}/inclusion", AUDITOR)
    head = proof["checkpoint"]
    root = bytes.fromhex(head["root_hash"])
    assert len({e["originator_id"] for e in proof["events"]}) == 3  # the round, two seats
    for e in proof["events"]:
        path = [bytes.fromhex(p) for p in e["proof"]]
        leaf = bytes.fromhex(e["leaf_hash"])
        assert merkle.verify_inclusion(leaf, e["leaf_index"], head["tree_size"], path, root)
    keys = store.data_dir / "keys.json"
    keys.write_text(c.http.get("/v1/audit/keys", headers=bearer(AUDITOR)).text)
    assert (
        audit_cli(
            ["verify", "--db", store.db, "--keys", str(keys), "--trust-local-keyring", "--balances"]
        )
        == 0
    )


def test_a_session_acts_only_on_its_own_seat_and_roles_are_kept_apart(
    client: Client, store: Store
) -> None:
    c = client
    ann, ann_token = c.player("ann")
    bob, bob_token = c.player("bob")
    c.tick()
    c.post(f"{seat(ann)}/bets", ann_token, {"bet": "main", "amount": 1_000})
    code = c.get(seat(ann), ann_token)["round"]["code"]
    before = raw_rows(store)
    refused = [
        ("post", f"{seat(ann)}/bets", bob_token, {"bet": "main", "amount": 100}),
        ("post", f"{seat(ann)}/undo-all", bob_token, None),
        ("post", f"{seat(ann)}/leave", bob_token, None),
        ("get", seat(ann), bob_token, None),
        ("post", f"/v1/sessions/{ann}/settings", bob_token, {"show_cash_out": False}),
        ("post", "/v1/tables", AUDITOR, {"table": "T2", "currency": "EUR"}),
        ("post", "/v1/tables/T1/pause", AUDITOR, {"reason": "look"}),
        ("post", f"{seat(ann)}/bets", AUDITOR, {"bet": "main", "amount": 100}),
        ("post", "/v1/tables/T1/pause", ann_token, {"reason": "look"}),
        ("post", "/v1/tables/T1/resume", ann_token, None),
        ("post", f"/v1/table-rounds/{code}/void", ann_token, {"reason": "x", "incident_id": "I"}),
        ("get", f"/v1/table-rounds/{code}", ann_token, None),
        ("get", "/v1/audit/tables/T1/shoes", ann_token, None),
        ("post", f"{seat(ann)}/bets", OPERATOR, {"bet": "main", "amount": 100}),
    ]
    for method, path, token, body in refused:
        headers = {**bearer(token), "Idempotency-Key": c.key()}
        r = c.http.request(method.upper(), path, json=body, headers=headers)
        assert r.status_code == 403, (method, path, r.status_code, r.text)
        assert r.json()["code"] == "forbidden"
    assert raw_rows(store) == before
    assert c.get(seat(bob), bob_token)["seat"] is None  # nothing of ann's seat shows


def test_bad_input_gets_a_typed_error_and_changes_nothing(client: Client, store: Store) -> None:
    c = client
    ann, token = c.player("ann")
    c.tick()
    refused = [
        (f"{seat(ann)}/bets", {"bet": "lucky-ladies", "amount": 100}, 422, "invalid-request"),
        (f"{seat(ann)}/bets", {"bet": "main", "amount": 0}, 422, "invalid-request"),
        (f"{seat(ann)}/bets", {"bet": "main", "amount": 99}, 422, "bet-below-minimum"),
        (f"{seat(ann)}/bets", {"bet": "hot-3", "amount": 100}, 409, "side-bet-without-main"),
        (f"{seat(ann)}/bets", {"bet": "main", "amount": 30_000}, 409, "insufficient-funds"),
        (f"{seat(ann)}/undo", None, 409, "nothing-to-undo"),
        (f"{seat(ann)}/undo-all", None, 409, "nothing-to-undo"),
        (f"{seat(ann)}/double", None, 409, "nothing-to-double"),  # 2x with no bet: not an undo
        (f"{seat(ann)}/all-side-bets", None, 409, "side-bet-without-main"),
        (f"{seat(ann)}/repeat", None, 409, "repeat-not-allowed"),
        (f"{seat(ann)}/decide", {"step": 1, "decision": "hit"}, 409, "step-closed"),
        (f"{seat(ann)}/decide", {"step": 1, "decision": "surrender"}, 422, "invalid-request"),
        (
            "/v1/sessions/" + ann + "/tables/T9/bets",
            {"bet": "main", "amount": 100},
            404,
            "table-not-found",
        ),
        (f"/v1/sessions/{ann}/settings", {"show_cash_out": "no"}, 422, "invalid-request"),
    ]
    operator = [
        ("/v1/tables", {"table": "T1", "currency": "EUR"}, 409, "table-exists"),
        (
            "/v1/tables",
            {"table": "T2", "currency": "EUR", "config": {"limits": {"main": [500, 100]}}},
            422,
            "invalid-table-config",
        ),
        (  # one deck cut at up to 85 %: a round could run out of cards after the cut
            "/v1/tables",
            {"table": "T2", "currency": "EUR", "config": {"decks": 1}},
            422,
            "invalid-table-config",
        ),
        (
            "/v1/tables",
            {"table": "T2", "currency": "EUR", "config": {"betting_ms": 5}},
            422,
            "invalid-request",
        ),
        ("/v1/tables/T9/pause", {"reason": "look"}, 404, "table-not-found"),
        (
            "/v1/table-rounds/IBJ-20261201-120000-XXXXXX/void",
            {"reason": "x", "incident_id": "I"},
            404,
            "table-not-found",
        ),
    ]
    before = raw_rows(store)
    for who, cases in ((token, refused), (OPERATOR, operator)):
        for path, body, status, code in cases:
            headers = {**bearer(who), "Idempotency-Key": c.key()}
            r = c.http.post(path, json=body, headers=headers)
            assert (r.status_code, r.json()["code"]) == (status, code), (path, r.text)
            assert r.json()["message"]
    assert raw_rows(store) == before
    # A late bet: the window closed by the server's clock.
    c.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100})
    c.clock.advance(10_000)
    before = raw_rows(store)
    late = c.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100}, status=409)
    assert late["code"] == "betting-closed" and late["game_code"]
    assert raw_rows(store) == before


def test_settings_follow_the_player_to_every_device_and_hide_the_cash_out(
    client: Client,
) -> None:
    c = client
    ann, phone = c.player("ann")
    laptop_session = c.post("/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 5_000}, 201)
    laptop, laptop_token = laptop_session["session_id"], laptop_session["token"]
    assert c.get(f"/v1/sessions/{laptop}/settings", laptop_token)["settings"]["show_cash_out"]
    changed = c.post(
        f"/v1/sessions/{ann}/settings", phone, {"show_cash_out": False, "sound": False}
    )
    assert changed["settings"] == {
        "show_cash_out": False,
        "show_chat": True,
        "sound": False,
        "video_quality": "auto",
    }
    assert c.get(f"/v1/sessions/{laptop}/settings", laptop_token) == changed  # another device
    c.tick()
    c.post(f"{seat(laptop)}/bets", laptop_token, {"bet": "main", "amount": 1_000})
    c.tick(10_000)
    c.post(f"{seat(laptop)}/insurance", laptop_token, {"take": False})
    c.tick()
    state = c.get(seat(laptop), laptop_token)
    assert state["settings"] == changed["settings"]
    assert {o["decision"] for o in state["options"]} == {"hit", "stand", "double"}  # no cash-out


def test_the_catalogue_lists_each_table_with_limits_paytables_rtp_and_cash_out_offers(
    client: Client,
) -> None:
    c = client
    _, token = c.player("ann")
    tables = c.get("/v1/tables", token)["tables"]
    assert [t["table"] for t in tables] == ["T1"]
    t1 = tables[0]
    assert t1["limits"]["main"] == [100, 500_000] and t1["windows_ms"]["betting"] == 10_000
    assert t1["paytables"]["perfect-pairs"]["pays"] == {
        "perfect": "25:1",
        "coloured": "12:1",
        "mixed": "6:1",
    }
    rtp = {(r["bet"], r["play"]): r["percent"] for r in t1["rtp"]}
    assert rtp[("main", "optimal")].startswith("99.456")
    assert rtp[("always-cash-out", "always cash out at the first opportunity")].startswith("96.79")
    assert {"perfect-pairs", "21+3", "hot-3", "bust-it", "insurance"} <= {b for b, _ in rtp}
    assert t1["cashout_table"]["offers"]["hard"]["16"]["11"] > 0
    assert c.get("/v1/tables/T1", token) == t1
    games = c.get("/v1/games", token)["other_games"]["blackjack"]
    assert [t["table"] for t in games["tables"]] == ["T1"] and games["on_the_ledger"] is True


def test_out_of_turn_decisions_and_a_paused_table_are_409_and_change_nothing(
    client: Client, store: Store
) -> None:
    c = client
    ann, ann_token = c.player("ann")
    cat, cat_token = c.player("cat")
    c.tick()
    c.post("/v1/tables/T1/pause", OPERATOR, {"reason": "card reader"})
    before = raw_rows(store)
    paused = c.post(f"{seat(ann)}/bets", ann_token, {"bet": "main", "amount": 1_000}, 409)
    assert paused["code"] == "table-paused" and raw_rows(store) == before
    c.post("/v1/tables/T1/resume", OPERATOR)
    c.post(f"{seat(ann)}/bets", ann_token, {"bet": "main", "amount": 1_000})
    c.tick(10_000)  # the deal: the insurance window
    c.post(f"{seat(ann)}/insurance", ann_token, {"take": True})
    before = raw_rows(store)
    for token, path, body, code in (
        (cat_token, f"{seat(cat)}/insurance", {"take": False}, "not-seated"),
        (ann_token, f"{seat(ann)}/insurance", {"take": False}, "already-decided"),
        (ann_token, f"{seat(ann)}/decide", {"step": 1, "decision": "hit"}, "step-closed"),
    ):
        assert c.post(path, token, body, 409)["code"] == code
    assert raw_rows(store) == before
    c.tick()  # step 1
    before = raw_rows(store)
    split = c.post(f"{seat(ann)}/decide", ann_token, {"step": 1, "decision": "split"}, 409)
    assert split["code"] == "not-an-option" and "hit" in split["message"]
    assert raw_rows(store) == before
