"""The error vocabulary over HTTP: each condition its own code and status, a message that
quotes the real limit or balance, the ids it concerns, and nothing written.

Every code README's error table lists that a client can provoke with the shipped tables
is provoked here (``refused`` also checks the raw rows are byte-for-byte unchanged).
"""

from __future__ import annotations

from typing import Any

from games.red_dog.engine import DEFAULT_RULES
from tests.integration.test_http_auth import open_red_dog_round, refused
from tests.integration.test_http_e2e import (
    OPERATOR,
    Api,
    api,  # the fixture, re-exported through __all__
)

__all__ = ["api"]

MIN, MAX = DEFAULT_RULES.min_bet, DEFAULT_RULES.max_bet


def expect(doc: dict[str, Any], status: int, code: str, message: str) -> None:
    assert (doc["status"], doc["code"]) == (status, code), doc
    assert doc["message"] == message, doc


def win_pending(api: Api, sid: str, token: str) -> dict[str, Any]:
    """Play 4-line rounds (1 coin of 10) until a draw wins: the round waits for collect."""
    for _ in range(100):
        dealt = api.post(
            f"/v1/sessions/{sid}/video-poker/deal", token, {"coin_value": 10, "coins": 1}
        )
        drawn = api.post(
            f"/v1/sessions/{sid}/video-poker/draw", token, {"holds": dealt["view"]["recommended"]}
        )
        if drawn["status"] == "open":
            assert drawn["view"]["phase"] == "win-pending"
            return drawn
    raise AssertionError("no winning 4-line draw in 100 rounds")


def test_acting_with_no_open_round_is_409_round_not_open(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    base = f"/v1/sessions/{sid}"
    for action, body in (
        ("red-dog/see", None),
        ("red-dog/raise", {"amount": 100}),
        ("video-poker/draw", {"holds": []}),
        ("video-poker/hold", {"holds": [0]}),
        ("video-poker/collect", None),
    ):
        doc = refused(api, "POST", f"{base}/{action}", token, body)
        expect(doc, 409, "round-not-open", f"no round is open in session {sid}")
        assert doc["session_id"] == sid


def test_a_decision_for_another_game_than_the_open_round_is_409(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    dealt = api.post(f"/v1/sessions/{sid}/video-poker/deal", token, {"coin_value": 10, "coins": 1})
    code = dealt["code"]
    for action, body in (("red-dog/see", None), ("red-dog/raise", {"amount": 100})):
        doc = refused(api, "POST", f"/v1/sessions/{sid}/{action}", token, body)
        message = f"the open round {code} is video-poker: a red-dog decision does not apply"
        expect(doc, 409, "decision-not-for-this-game", message)
        assert (doc["session_id"], doc["game_code"]) == (sid, code)


def test_video_poker_actions_out_of_phase_say_which_action_and_phase(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    base = f"/v1/sessions/{sid}"
    api.post(f"{base}/video-poker/deal", token, {"coin_value": 10, "coins": 1})
    doc = refused(api, "POST", f"{base}/video-poker/collect", token)
    expect(
        doc, 409, "action-out-of-phase", "cannot collect in phase 'dealt'; allowed in: win-pending"
    )
    doc = refused(api, "POST", f"{base}/video-poker/pick", token, {"index": 0})
    expect(doc, 409, "action-out-of-phase", "cannot pick in phase 'dealt'; allowed in: double-pick")
    api.casino.close_session("close-1", sid)

    sid, token = api.new_session("ann")
    base = f"/v1/sessions/{sid}"
    won = win_pending(api, sid, token)
    doc = refused(api, "POST", f"{base}/video-poker/hold", token, {"holds": [0, 1]})
    # A hold after the draw is refused as a hold (it used to say "cannot draw").
    message = "cannot hold cards in phase 'win-pending'; allowed in: dealt"
    expect(doc, 409, "action-out-of-phase", message)
    doc = refused(api, "POST", f"{base}/video-poker/draw", token, {"holds": [0]})
    expect(doc, 409, "action-out-of-phase", "cannot draw in phase 'win-pending'; allowed in: dealt")
    picking = api.post(f"{base}/video-poker/double", token)
    assert picking["view"]["phase"] == "double-pick", won
    doc = refused(api, "POST", f"{base}/video-poker/pick", token, {"index": 4})
    # The request schema bounds the index (0-3) before the game sees it.
    assert (doc["status"], doc["code"]) == (422, "invalid-request") and "index" in doc["message"]


def test_red_dog_bets_outside_the_table_limits_quote_the_limits(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    bet = f"/v1/sessions/{sid}/red-dog/bet"
    doc = refused(api, "POST", bet, token, {"bet": MIN - 1})
    expect(doc, 422, "bet-below-minimum", f"bet {MIN - 1} is below the table minimum {MIN}")
    doc = refused(api, "POST", bet, token, {"bet": MAX + 1})
    expect(doc, 422, "bet-above-maximum", f"bet {MAX + 1} is above the table maximum {MAX}")


def test_a_red_dog_raise_above_max_raise_quotes_max_raise(api: Api) -> None:
    api.new_player("ann")
    # Above half the table maximum the table limit binds: max_raise = MAX - bet.
    big = 30_000
    sid, token = api.new_session("ann", buy_in=3 * MAX)
    for _ in range(60):
        r = api.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": big})
        if r["status"] == "open":
            break
    else:
        raise AssertionError("60 Red Dog deals in a row settled at once")
    max_raise = r["view"]["max_raise"]
    assert max_raise == MAX - big
    for amount in (max_raise + 1, big + 1):  # within, then above, the original bet
        doc = refused(api, "POST", f"/v1/sessions/{sid}/red-dog/raise", token, {"amount": amount})
        message = (
            f"raise {amount} is above the maximum raise {max_raise}: bet plus raise"
            f" {big + amount} is above the table maximum {MAX}"
        )
        expect(doc, 422, "raise-above-maximum", message)

    # At or below half the table maximum the original bet binds.
    sid, token = api.new_session("ann")
    open_red_dog_round(api, sid, token)  # bets 100
    doc = refused(api, "POST", f"/v1/sessions/{sid}/red-dog/raise", token, {"amount": 101})
    expect(doc, 422, "raise-too-large", "raise 101 is above the allowed 100 (the original bet)")


def test_insufficient_funds_quote_the_real_balance(api: Api) -> None:
    api.new_player("ann", deposit=1_000)
    doc = refused(api, "POST", "/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 1_001})
    expect(doc, 409, "insufficient-funds", "account balance 1000 is below 1001")
    assert doc["player_id"] == "ann"
    sid, token = api.new_session("ann", buy_in=500)
    doc = refused(api, "POST", f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 600})
    expect(doc, 409, "insufficient-funds", "session balance 500 is below 600")
    assert doc["session_id"] == sid
    doc = refused(api, "POST", "/v1/accounts/ann/withdrawals", OPERATOR, {"amount": 501})
    expect(doc, 409, "insufficient-funds", "account balance 500 is below 501")


def test_a_refused_void_quotes_the_accounts_real_balance(api: Api) -> None:
    api.new_player("ann", deposit=20_000)
    sid, token = api.new_session("ann", buy_in=10_000)
    for _ in range(50):  # a win that pays more than its stake
        won = win_pending(api, sid, token)
        settled = api.post(f"/v1/sessions/{sid}/video-poker/collect", token)
        stake, win = settled["staked"], settled["payout"]
        if win > stake:
            break
    else:
        raise AssertionError("no 4-line win above its stake in 50 wins")
    api.post(f"/v1/sessions/{sid}/close", OPERATOR)
    balance = api.get("/v1/accounts/ann", OPERATOR)["balance"]
    # Leave less on the account than the void would take back (win less refunded stakes).
    api.post("/v1/accounts/ann/withdrawals", OPERATOR, {"amount": balance})
    doc = refused(
        api,
        "POST",
        f"/v1/rounds/{won['code']}/void",
        OPERATOR,
        {"reason": "display fault", "incident_id": "INC-1"},
    )
    message = (
        f"account balance 0 cannot cover reversing the win {win} of round {won['code']}"
        f" less its refunded stakes {stake} (short by {win - stake})"
    )
    expect(doc, 409, "insufficient-funds", message)
    assert (doc["player_id"], doc["game_code"]) == ("ann", won["code"])


def test_lookups_of_unknown_things_are_404_and_name_them(api: Api) -> None:
    code = "RD-20000101-000000-ZZZZ"
    doc = refused(api, "GET", f"/v1/rounds/{code}", OPERATOR)
    expect(doc, 404, "round-not-found", f"no round with game code {code!r}")
    doc = refused(api, "GET", "/v1/accounts/nobody", OPERATOR)
    assert (doc["status"], doc["code"], doc["player_id"]) == (404, "account-not-found", "nobody")


def test_session_state_conflicts_are_409(api: Api) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    shown = open_red_dog_round(api, sid, token)
    doc = refused(api, "POST", f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
    expect(doc, 409, "session-busy", "a round is open in this session")
    assert (doc["session_id"], doc["game_code"]) == (sid, shown["code"])
    api.post(f"/v1/sessions/{sid}/red-dog/see", token)
    api.post(f"/v1/sessions/{sid}/close", OPERATOR)
    doc = refused(api, "POST", f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
    expect(doc, 409, "session-closed", "the game session is closed")
    key = api.key()
    api.post("/v1/accounts/ann/deposits", OPERATOR, {"amount": 5}, key=key)
    r = api.post_raw("/v1/accounts/ann/deposits", OPERATOR, {"amount": 6}, key=key)
    assert (r.status_code, r.json()["code"]) == (409, "idempotency-conflict")


def test_video_poker_deal_options_and_holds_outside_the_variant_name_what_is_offered(
    api: Api,
) -> None:
    api.new_player("ann")
    sid, token = api.new_session("ann")
    deal = f"/v1/sessions/{sid}/video-poker/deal"
    doc = refused(api, "POST", deal, token, {"coin_value": 7, "coins": 1})
    message = "coin value 7 is not offered; choose one of (10, 20, 50, 100, 200, 500)"
    expect(doc, 422, "invalid-coin-value", message)
    doc = refused(api, "POST", deal, token, {"coin_value": 10, "coins": 1, "lines": 3})
    expect(doc, 422, "invalid-lines", "3 lines are not offered; choose one of (4,)")
    body = {"variant": "jb-9", "coin_value": 10, "coins": 1}
    doc = refused(api, "POST", deal, token, body)
    # The request schema knows the variants (in process: unknown-variant).
    assert (doc["status"], doc["code"]) == (422, "invalid-request") and "variant" in doc["message"]
    api.post(deal, token, {"coin_value": 10, "coins": 1})
    doc = refused(api, "POST", f"/v1/sessions/{sid}/video-poker/draw", token, {"holds": [0, 0]})
    assert (doc["status"], doc["code"]) == (422, "invalid-holds") and "[0, 0]" in doc["message"]


def test_a_buy_in_in_another_currency_than_the_accounts_is_refused(api: Api) -> None:
    api.new_player("ann")
    body = {"player_id": "ann", "buy_in": 100, "currency": "USD"}
    doc = refused(api, "POST", "/v1/sessions", OPERATOR, body)
    expect(doc, 422, "currency-mismatch", "account is in EUR, buy-in in USD")
    assert doc["player_id"] == "ann"
