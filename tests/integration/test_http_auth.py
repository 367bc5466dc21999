"""Who may do what over HTTP, and what a refused request leaves behind: nothing.

A session token acts on its own session only; a player cannot void, close or fund; an
auditor cannot write; the operator cannot play. Every refusal is a typed JSON error and
the raw event rows are byte-for-byte unchanged after it. Responses never show an undealt
card or a seed before its round has ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from games.cards import full_deck
from games.red_dog.engine import shuffled_deck
from games.video_poker.engine import double_deck
from ledger.rounds import unseal_seed
from tests.integration.test_http_e2e import (
    AUDITOR,
    OPERATOR,
    Api,
    api,  # the fixture, re-exported through __all__
    bearer,
    rows_digest,
)

__all__ = ["api"]


def two_sessions(api: Api) -> tuple[tuple[str, str], tuple[str, str]]:
    api.new_player("ann")
    api.new_player("bob")
    return api.new_session("ann"), api.new_session("bob")


def open_red_dog_round(api: Api, sid: str, token: str) -> dict[str, Any]:
    """Bet until the two cards show a spread (pairs and consecutive cards settle at once)."""
    for _ in range(60):
        r = api.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
        if r["status"] == "open":
            return r
    raise AssertionError("60 Red Dog deals in a row settled at once")


def refused(
    api: Api, method: str, path: str, token: str | None, body: Any = None
) -> dict[str, Any]:
    headers = {"Idempotency-Key": api.key()}
    if token is not None:
        headers.update(bearer(token))
    before = rows_digest(api.store)
    r = api.client.request(method, path, json=body, headers=headers)
    assert 400 <= r.status_code < 500, (method, path, r.status_code, r.text)
    doc: dict[str, Any] = r.json()
    assert set(doc) >= {"code", "message"} and "Traceback" not in r.text
    assert rows_digest(api.store) == before, f"{method} {path} changed the log"
    doc["status"] = r.status_code
    return doc


def test_a_session_token_cannot_act_on_or_read_another_session(api: Api) -> None:
    (a_sid, a_token), (b_sid, b_token) = two_sessions(api)
    b_round = open_red_dog_round(api, b_sid, b_token)
    actions: list[tuple[str, dict[str, Any] | None]] = [
        ("red-dog/bet", {"bet": 100}),
        ("red-dog/raise", {"amount": 100}),
        ("red-dog/see", None),
        ("red-dog/repeat", None),
        ("video-poker/deal", {"coin_value": 10, "coins": 1, "lines": 4}),
        ("video-poker/draw", {"holds": []}),
        ("video-poker/collect", None),
        ("video-poker/double", None),
        ("video-poker/half-double", None),
        ("video-poker/pick", {"index": 0}),
    ]
    for action, body in actions:
        doc = refused(api, "POST", f"/v1/sessions/{b_sid}/{action}", a_token, body)
        assert (doc["status"], doc["code"], doc["session_id"]) == (403, "forbidden", b_sid)
    for view in ("", "/round", "/history"):
        doc = refused(api, "GET", f"/v1/sessions/{b_sid}{view}", a_token)
        assert (doc["status"], doc["code"]) == (403, "forbidden")
    # B's token in any spelling of A's path, or A's MAC under B's id, gets nowhere either.
    doc = refused(api, "POST", f"/v1/sessions/{a_sid.upper()}/red-dog/see", b_token)
    assert doc["status"] == 403
    forged = f"{b_sid}.{a_token.rpartition('.')[2]}"
    doc = refused(api, "POST", f"/v1/sessions/{b_sid}/red-dog/see", forged)
    assert (doc["status"], doc["code"]) == (401, "unauthenticated")
    # B's round is untouched and still B's to finish.
    assert api.get(f"/v1/sessions/{b_sid}/round", b_token)["round"] == b_round
    api.post(f"/v1/sessions/{b_sid}/red-dog/see", b_token)


def test_a_player_cannot_void_close_fund_or_audit(api: Api) -> None:
    (sid, token), _ = two_sessions(api)
    code = open_red_dog_round(api, sid, token)["code"]
    void = {"reason": "player asked", "incident_id": "X-1"}
    for method, path, body in [
        ("POST", f"/v1/rounds/{code}/void", void),
        ("GET", f"/v1/rounds/{code}", None),
        ("POST", f"/v1/sessions/{sid}/close", None),
        ("POST", "/v1/accounts/ann/deposits", {"amount": 1_000}),
        ("POST", "/v1/accounts/ann/withdrawals", {"amount": 1_000}),
        ("POST", "/v1/sessions", {"player_id": "ann", "buy_in": 1_000}),
        ("POST", "/v1/accounts", {"player_id": "eve", "currency": "EUR"}),
        ("GET", "/v1/accounts/ann/history", None),
        ("GET", "/v1/audit/checkpoints/latest", None),
        ("GET", "/v1/audit/events", None),
    ]:
        doc = refused(api, method, path, token, body)
        assert (doc["status"], doc["code"]) == (403, "forbidden"), (path, doc)
    assert api.get(f"/v1/rounds/{code}", OPERATOR)["status"] == "open"


def test_an_auditor_cannot_write_and_the_operator_cannot_play(api: Api) -> None:
    (sid, token), _ = two_sessions(api)
    code = open_red_dog_round(api, sid, token)["code"]
    writes: list[tuple[str, dict[str, Any] | None]] = [
        ("/v1/accounts", {"player_id": "eve", "currency": "EUR"}),
        ("/v1/accounts/ann/deposits", {"amount": 1_000}),
        ("/v1/accounts/ann/withdrawals", {"amount": 1_000}),
        ("/v1/sessions", {"player_id": "ann", "buy_in": 1_000}),
        (f"/v1/sessions/{sid}/close", None),
        (f"/v1/rounds/{code}/void", {"reason": "audit", "incident_id": "A-1"}),
        (f"/v1/sessions/{sid}/red-dog/see", None),
        (f"/v1/sessions/{sid}/red-dog/bet", {"bet": 100}),
    ]
    for path, body in writes:
        doc = refused(api, "POST", path, AUDITOR, body)
        assert (doc["status"], doc["code"]) == (403, "forbidden"), path
    for action, body in [("red-dog/see", None), ("red-dog/raise", {"amount": 100})]:
        doc = refused(api, "POST", f"/v1/sessions/{sid}/{action}", OPERATOR, body)
        assert (doc["status"], doc["code"]) == (403, "forbidden")
    # Reading is what the auditor is for.
    assert api.get("/v1/audit/keys", AUDITOR)["keys"]


def test_no_or_unknown_credentials_are_401_with_a_bearer_challenge(api: Api) -> None:
    for token in (None, "nonsense", OPERATOR + "x", "00000000-0000-0000-0000-000000000000.AA"):
        doc = refused(api, "POST", "/v1/accounts", token, {"player_id": "x", "currency": "EUR"})
        assert (doc["status"], doc["code"]) == (401, "unauthenticated")
    r = api.client.get("/v1/games")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert api.client.get("/health").json() == {"status": "ok"}


def test_refused_game_requests_are_typed_and_change_nothing(api: Api) -> None:
    api.new_player("ann", deposit=10_000)
    sid, token = api.new_session("ann", buy_in=500)
    base = f"/v1/sessions/{sid}"
    cases: list[tuple[str, Any, int, str]] = [
        ("red-dog/bet", {"bet": 99}, 422, "bet-below-minimum"),
        ("red-dog/bet", {"bet": 600}, 409, "insufficient-funds"),
        ("red-dog/bet", {"bet": 100.0}, 422, "invalid-request"),
        ("red-dog/bet", {"bet": "100"}, 422, "invalid-request"),
        ("red-dog/bet", {"bet": True}, 422, "invalid-request"),
        ("red-dog/bet", {"bet": 100, "extra": 1}, 422, "invalid-request"),
        ("red-dog/bet", [100], 422, "invalid-request"),
        ("red-dog/see", None, 409, "round-not-open"),  # no round open
        ("red-dog/repeat", None, 422, "invalid-request"),  # nothing to repeat
        ("video-poker/deal", {"coin_value": 7, "coins": 1, "lines": 4}, 422, None),
        ("video-poker/deal", {"coin_value": 10, "coins": 6, "lines": 4}, 422, "invalid-request"),
        ("video-poker/deal", {"coin_value": 10, "coins": 1, "lines": 3}, 422, None),
        ("video-poker/deal", {"coin_value": 50, "coins": 5, "lines": 4}, 409, None),
        ("video-poker/draw", {"holds": [5]}, 422, "invalid-request"),
    ]
    for action, body, status, code in cases:
        doc = refused(api, "POST", f"{base}/{action}", token, body)
        assert doc["status"] == status, (action, body, doc)
        assert code is None or doc["code"] == code, (action, body, doc)
    dealt = api.post(f"{base}/video-poker/deal", token, {"coin_value": 10, "coins": 1, "lines": 4})
    for action, body, status, code in [
        ("video-poker/collect", None, 409, "action-out-of-phase"),
        ("video-poker/pick", {"index": 0}, 409, "action-out-of-phase"),
        ("video-poker/draw", {"holds": [0, 0]}, 422, None),
        ("red-dog/bet", {"bet": 100}, 409, "session-busy"),
        ("red-dog/raise", {"amount": 100}, 409, "decision-not-for-this-game"),
    ]:
        doc = refused(api, "POST", f"{base}/{action}", token, body)
        assert doc["status"] == status, (action, body, doc)
        assert code is None or doc["code"] == code, (action, body, doc)
    assert api.get(f"{base}/round", token)["round"] == dealt


def test_operator_errors_name_the_ids_they_concern(api: Api) -> None:
    doc = refused(api, "GET", "/v1/rounds/JB4-20260101-000000-ZZZZ", OPERATOR)
    assert doc["status"] == 404
    assert (doc["code"], doc["game_code"]) == ("round-not-found", "JB4-20260101-000000-ZZZZ")
    doc = refused(api, "POST", "/v1/accounts/nobody/deposits", OPERATOR, {"amount": 5})
    assert (doc["status"], doc["code"], doc["player_id"]) == (404, "account-not-found", "nobody")
    missing = "00000000-0000-4000-8000-000000000000"
    doc = refused(api, "POST", f"/v1/sessions/{missing}/close", OPERATOR)
    assert (doc["status"], doc["code"], doc["session_id"]) == (404, "session-not-found", missing)
    api.new_player("ann")
    doc = refused(api, "POST", "/v1/accounts", OPERATOR, {"player_id": "ann", "currency": "EUR"})
    assert (doc["status"], doc["code"]) == (409, "account-exists")
    doc = refused(api, "POST", "/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 10**9})
    assert (doc["status"], doc["code"]) == (409, "insufficient-funds")
    doc = refused(api, "GET", "/v1/audit/checkpoints/latest", AUDITOR)
    assert (doc["status"], doc["code"]) == (404, "checkpoint-not-found")
    doc = refused(api, "GET", "/v1/audit/consistency?old=2&new=1", AUDITOR)
    assert doc["status"] == 422
    doc = refused(api, "DELETE", "/v1/accounts/ann", OPERATOR)
    assert (doc["status"], doc["code"]) == (405, "method-not-allowed")
    doc = refused(api, "GET", "/v1/nowhere", OPERATOR)
    assert (doc["status"], doc["code"]) == (404, "not-found")


def card_strings(doc: Any) -> set[str]:
    """Every string in a JSON document that names a card."""
    deck = {str(c) for c in full_deck()}
    if isinstance(doc, str):
        return {doc} & deck
    if isinstance(doc, dict):
        doc = list(doc.values())
    if isinstance(doc, list):
        return set().union(*(card_strings(v) for v in doc)) if doc else set()
    return set()


def seed_of(api: Api, code: str) -> bytes:
    """What only the house knows mid-round: the seed, unsealed with the sealing key."""
    rnd = api.casino.find_round(code)
    key = api.store.keyring.sealing_keys[rnd.sealing_kid]
    return unseal_seed(key, rnd.id, rnd.sealed_seed)


def assert_nothing_hidden_shows(
    api: Api, sid: str, token: str, shown: dict[str, Any], visible: set[str]
) -> None:
    """Every response the player or the operator can get about the open round shows no
    card outside ``visible`` and not the seed."""
    seed = seed_of(api, shown["code"]).hex()
    responses = [
        api.client.get(f"/v1/sessions/{sid}/round", headers=bearer(token)),
        api.client.get(f"/v1/sessions/{sid}/history", headers=bearer(token)),
        api.client.get(f"/v1/rounds/{shown['code']}", headers=bearer(OPERATOR)),
    ]
    assert responses[0].json()["round"] == shown
    for r in responses:
        assert r.status_code == 200
        assert seed not in r.text.lower()
        assert card_strings(r.json()) <= visible, r.text
    assert seed not in str(shown) and card_strings(shown) <= visible


def test_responses_show_no_undealt_card_and_no_seed_before_the_round_ends(api: Api) -> None:
    (sid, token), _ = two_sessions(api)

    # Red Dog waiting for raise/see: two cards shown, the third is the house's secret.
    shown = open_red_dog_round(api, sid, token)
    seed = seed_of(api, shown["code"])
    assert shown["view"]["cards"] == [str(c) for c in shuffled_deck(seed)[:2]]
    assert_nothing_hidden_shows(api, sid, token, shown, set(shown["view"]["cards"]))
    done = api.post(f"/v1/sessions/{sid}/red-dog/see", token)
    assert done["seed"] == seed.hex()
    assert done["view"]["cards"] == [str(c) for c in shuffled_deck(seed)[:3]]

    # Jacks or Better after the deal: five cards shown, each line's draw deck unseen.
    deal = {"coin_value": 10, "coins": 5, "lines": 4}
    for _ in range(40):
        dealt = api.post(f"/v1/sessions/{sid}/video-poker/deal", token, deal)
        seed = seed_of(api, dealt["code"])
        assert_nothing_hidden_shows(api, sid, token, dealt, set(dealt["view"]["dealt"]))
        holds = dealt["view"]["recommended"]
        drawn = api.post(f"/v1/sessions/{sid}/video-poker/draw", token, {"holds": holds})
        if drawn["status"] != "open":
            continue
        # A double-up step: the dealer's card up, the four face-down cards unseen.
        picking = api.post(f"/v1/sessions/{sid}/video-poker/double", token)
        view = picking["view"]
        visible = set(view["dealt"]) | {view["double_up"][0]["dealer_card"]}
        visible |= {c for line in view["lines"] for c in line["cards"]}
        assert view["double_up"][0]["cards"] == [] and view["phase"] == "double-pick"
        assert_nothing_hidden_shows(api, sid, token, picking, visible)
        face_down = {str(c) for c in double_deck(seed, 0)[1:5]}
        picked = api.post(f"/v1/sessions/{sid}/video-poker/pick", token, {"index": 2})
        assert set(picked["view"]["double_up"][0]["cards"]) == face_down
        return
    pytest.fail("no winning draw in 40 deals")
