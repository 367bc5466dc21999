"""Bad input to Red Dog rounds changes nothing (DESIGN §2.6), on SQLite and PostgreSQL.

Every refused command must raise a typed error (a ``LedgerError`` or a game's
``GameRuleError``) with a stable ``code`` and a message, and leave the raw event rows
byte-for-byte as they were: not even its request id is recorded.
"""

from __future__ import annotations

import hashlib
import uuid
from decimal import Decimal

import pytest

from audit_cli.rounds import check_round
from games.errors import (
    ActionOutOfPhase,
    BetAboveMaximum,
    BetBelowMinimum,
    InvalidDecision,
    RaiseTooLarge,
)
from games.errors import InvalidAmount as GameInvalidAmount
from games.red_dog.engine import DEFAULT_RULES, shuffled_deck, spread_of
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.commands import red_dog_command
from ledger.errors import (
    DecisionNotForThisGame,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidRequest,
    RoundNotFound,
    RoundNotOpen,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
)
from ledger.results import RoundPlayed
from tests.conftest import Store
from tests.helpers import ChosenSeeds, assert_refused
from tests.helpers import open_session as open_funded_session

BUY_IN = 20_000
BET = 200
UNKNOWN_CODE = "RD-20000101-000000-ZZZZ"
NOT_AMOUNTS = [0, -100, 100.0, 150.5, True, False, "100", None, Decimal("100")]
ROUND_CLOSED_ERRORS = (RoundNotOpen, ActionOutOfPhase)


def spread_seed(n: int = 0) -> bytes:
    """A seed whose first two cards have a spread, so the round waits for a decision."""
    found = 0
    for i in range(10_000):
        seed = hashlib.sha256(f"bad-input/{i}".encode()).digest()
        deck = shuffled_deck(seed)
        if spread_of(deck[0].rank, deck[1].rank) not in (0, None):
            if found == n:
                return seed
            found += 1
    raise AssertionError("no seed with a spread")


@pytest.fixture
def app(store: Store) -> Casino:
    """A Casino on the store whose rounds all show a spread: the player must raise or see."""
    casino = bootstrap(
        store.settings(),
        keyring=store.keyring,
        seed_source=ChosenSeeds(*(spread_seed(i) for i in range(8))),
    )
    store.apps.append(casino)
    return casino


def open_session(app: Casino, player: str = "ann", buy_in: int = BUY_IN) -> str:
    return open_funded_session(app, player, buy_in, deposit=100_000)


def open_round(app: Casino, sid: str, bet: int = BET, rid: str = "bet") -> RoundPlayed:
    result = app.red_dog_bet(rid, sid, bet)
    assert result.status == "open" and result.view["phase"] == "decide"
    return result


# -- stakes -----------------------------------------------------------------------------


def test_a_bet_that_is_not_a_positive_whole_number_of_minor_units_is_refused(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)

    for bet in NOT_AMOUNTS:
        err = assert_refused(store, GameInvalidAmount, app.red_dog_bet, f"bet-{bet!r}", sid, bet)
        assert err.code == "invalid-amount" and repr(bet) in err.message

    assert app.session_balance(sid) == BUY_IN
    assert app.open_round(sid) is None


def test_a_bet_below_the_table_minimum_is_refused_naming_the_minimum(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)

    err = assert_refused(
        store, BetBelowMinimum, app.red_dog_bet, "bet", sid, DEFAULT_RULES.min_bet - 1
    )

    assert err.code == "bet-below-minimum" and str(DEFAULT_RULES.min_bet) in err.message


def test_a_bet_above_the_table_maximum_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app, buy_in=90_000)

    err = assert_refused(
        store, BetAboveMaximum, app.red_dog_bet, "bet", sid, DEFAULT_RULES.max_bet + 1
    )

    assert err.code == "bet-above-maximum" and str(DEFAULT_RULES.max_bet) in err.message


def test_a_bet_above_the_session_balance_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app, buy_in=1_000)

    err = assert_refused(store, InsufficientFunds, app.red_dog_bet, "bet", sid, 1_001)

    assert err.code == "insufficient-funds" and err.ids == {"session_id": sid}
    assert app.session_balance(sid) == 1_000


def test_repeat_without_a_previous_bet_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)

    assert_refused(store, InvalidRequest, app.red_dog_repeat, "repeat", sid)


def test_reusing_a_request_id_for_another_bet_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    first = open_round(app, sid, rid="bet-1")
    app.red_dog_see("see-1", sid)

    assert_refused(store, IdempotencyConflict, app.red_dog_bet, "bet-1", sid, BET + 100)
    assert app.red_dog_bet("bet-1", sid, BET) == first  # the same request: same answer


def test_a_bet_without_a_usable_request_id_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)

    for request_id in ("", None, 17, "x" * 201):
        assert_refused(store, InvalidRequest, app.red_dog_bet, request_id, sid, BET)


# -- raise and see ----------------------------------------------------------------------


def test_a_raise_above_the_original_bet_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    shown = open_round(app, sid)

    err = assert_refused(store, RaiseTooLarge, app.red_dog_raise, "raise", sid, BET + 1)

    assert err.code == "raise-too-large"
    rnd = app.open_round(sid)
    assert rnd is not None and rnd.view == shown.view and rnd.staked == BET
    assert app.red_dog_raise("raise-ok", sid, BET).staked == 2 * BET  # a legal raise still works


def test_a_raise_that_is_not_a_positive_whole_number_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    open_round(app, sid)

    for amount in NOT_AMOUNTS:
        err = assert_refused(
            store, GameInvalidAmount, app.red_dog_raise, f"raise-{amount!r}", sid, amount
        )
        assert err.code == "invalid-amount"

    assert app.session_balance(sid) == BUY_IN - BET


def test_a_raise_beyond_the_table_maximum_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app, buy_in=90_000)
    bet = 30_000
    open_round(app, sid, bet=bet)

    err = assert_refused(
        store, BetAboveMaximum, app.red_dog_raise, "raise", sid, DEFAULT_RULES.max_bet - bet + 1
    )

    # A RaiseAboveMaximum is a BetAboveMaximum whose message quotes max_raise, the limit
    # that binds (table maximum - bet), not the original bet.
    assert err.code == "raise-above-maximum"
    max_raise = DEFAULT_RULES.max_bet - bet
    assert f"above the maximum raise {max_raise}:" in err.message


def test_a_raise_above_the_session_balance_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app, buy_in=300)
    open_round(app, sid, bet=BET)  # 100 left

    assert_refused(store, InsufficientFunds, app.red_dog_raise, "raise", sid, 101)

    assert app.session_balance(sid) == 100
    assert app.red_dog_raise("raise-ok", sid, 100).staked == BET + 100


def test_a_raise_or_see_with_no_open_round_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)

    assert_refused(store, RoundNotOpen, app.red_dog_raise, "raise", sid, BET)
    err = assert_refused(store, RoundNotOpen, app.red_dog_see, "see", sid)
    assert err.code == "round-not-open" and err.ids == {"session_id": sid}


def test_see_or_raise_after_the_round_settled_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    open_round(app, sid)
    settled = app.red_dog_see("see-1", sid)
    assert settled.status == "settled"

    assert_refused(store, ROUND_CLOSED_ERRORS, app.red_dog_see, "see-2", sid)
    assert_refused(store, ROUND_CLOSED_ERRORS, app.red_dog_raise, "raise-2", sid, BET)

    assert app.session_balance(sid) == settled.balance
    assert app.find_round(settled.code).view == settled.view


def test_a_malformed_decision_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    open_round(app, sid)

    for decision in (["fold"], ["raise"], ["raise", 100, 100], ["see", 1], [], "see", None):
        assert_refused(
            store,
            InvalidDecision,
            lambda rid, sid, d: app.command(rid, red_dog_command(sid, d)),
            f"act-{decision!r}",
            sid,
            decision,
        )


# -- sessions ---------------------------------------------------------------------------


def test_acting_in_a_session_without_an_open_round_leaves_another_sessions_round_alone(
    store: Store, app: Casino
) -> None:
    a = open_session(app, player="ann")
    b = open_session(app, player="bob")
    shown = open_round(app, b, rid="bob-bet")

    # Ann's session id and her own request ids: she has no round, Bob's round is not hers.
    assert_refused(store, RoundNotOpen, app.red_dog_see, "bob-bet", a)
    assert_refused(store, RoundNotOpen, app.red_dog_raise, "raise", a, BET)

    rnd = app.open_round(b)
    assert rnd is not None and rnd.code == shown.code and rnd.view == shown.view
    assert (app.session_balance(a), app.session_balance(b)) == (BUY_IN, BUY_IN - BET)
    assert app.red_dog_see("bob-see", b).code == shown.code


def test_a_red_dog_action_on_another_games_open_round_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    dealt = app.vp_deal("vp-deal", sid, "jb-4line", 10, 1, 4)
    assert dealt.status == "open"

    assert_refused(store, DecisionNotForThisGame, app.red_dog_see, "see", sid)
    err = assert_refused(store, DecisionNotForThisGame, app.red_dog_raise, "raise", sid, BET)
    assert err.code == "decision-not-for-this-game" and err.ids["game_code"] == dealt.code
    assert_refused(store, SessionBusy, app.red_dog_repeat, "repeat", sid)  # a round is open

    rnd = app.open_round(sid)
    assert rnd is not None and rnd.code == dealt.code and rnd.view == dealt.view


def test_commands_on_an_unknown_session_are_refused(store: Store, app: Casino) -> None:
    open_session(app)

    for session_id in (str(uuid.uuid4()), "not-a-session", ""):
        for command, args in (
            (app.red_dog_bet, ("bet", session_id, BET)),
            (app.red_dog_raise, ("raise", session_id, BET)),
            (app.red_dog_see, ("see", session_id)),
            (app.red_dog_repeat, ("repeat", session_id)),
        ):
            err = assert_refused(store, SessionNotFound, command, *args)
            assert err.code == "session-not-found"


def test_a_bet_or_see_in_a_closed_session_is_refused(store: Store, app: Casino) -> None:
    sid = open_session(app)
    app.close_session("close", sid)

    assert_refused(store, SessionClosed, app.red_dog_bet, "bet", sid, BET)
    assert_refused(store, SessionClosed, app.red_dog_see, "see", sid)


# -- game codes -------------------------------------------------------------------------


def test_an_unknown_game_code_is_round_not_found(store: Store, app: Casino) -> None:
    sid = open_session(app)
    open_round(app, sid)

    for code in (UNKNOWN_CODE, "", "RD-garbage", "'; DROP TABLE stored_events; --"):
        err = assert_refused(store, RoundNotFound, app.find_round, code)
        assert err.code == "round-not-found"
        assert_refused(store, RoundNotFound, app.history.timeline, code)
        assert_refused(
            store, RoundNotFound, app.void_round, f"void-{code}", code, "malfunction", "INC-1"
        )
        report = check_round(store.db, code)
        assert not report.ok and report.status == "missing"


def test_a_game_code_that_is_not_text_is_round_not_found(store: Store, app: Casino) -> None:
    for code in (None, 42, b"RD"):
        assert_refused(store, RoundNotFound, app.find_round, code)


@pytest.mark.parametrize(("reason", "incident"), [("", "INC-1"), ("  ", "INC-1"), ("x", "")])
def test_a_void_without_a_reason_and_an_incident_id_is_refused(
    store: Store, app: Casino, reason: str, incident: str
) -> None:
    sid = open_session(app)
    shown = open_round(app, sid)

    assert_refused(store, InvalidRequest, app.void_round, "void", shown.code, reason, incident)

    assert app.find_round(shown.code).status == "open"
