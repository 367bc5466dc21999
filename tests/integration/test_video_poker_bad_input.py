"""Bad input to Jacks or Better rounds changes nothing (DESIGN §2.6, §5.1), on SQLite and
PostgreSQL.

Every refused deal or decision must raise a typed error (a ``LedgerError`` or a game's
``GameRuleError``) with a stable ``code`` and a message, and leave the raw event rows
byte-for-byte as they were: not even its request id is recorded. Where a test needs a
particular deal it opens the Casino with a fake seed source (:class:`ChosenSeeds`).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from games.cards import Card, full_deck
from games.errors import ActionOutOfPhase, GameRuleError, InvalidDecision
from games.poker import HandRank, evaluate
from games.red_dog.engine import shuffled_deck, spread_of
from games.rng import RandomStream
from games.video_poker.double_up import DoubleUpNotOffered, InvalidPick
from games.video_poker.engine import InvalidCoins, InvalidCoinValue, InvalidHolds, InvalidLines
from games.video_poker.variants import VARIANTS
from ledger.casino import Casino
from ledger.errors import (
    DecisionNotForThisGame,
    InsufficientFunds,
    RoundNotOpen,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
)
from tests.conftest import Seeded, Store
from tests.helpers import assert_refused
from tests.helpers import open_session as open_funded_session

BUY_IN = 20_000
SMALL = ("jb-4line", 10, 1, 4)
ALL_DECISIONS: list[list[Any]] = [
    ["draw", []],
    ["collect"],
    ["double"],
    ["half-double"],
    ["pick", 0],
]
UNOFFERED_LINES: list[tuple[str, Any]] = [
    *[("jb-multi", n) for n in (7, 0, 4, 101, 10.0)],
    *[("jb-4line", n) for n in (1, 3, 5, "4")],
]


# -- seeds --------------------------------------------------------------------------------


def dealt_cards(seed: bytes) -> list[Card]:
    return RandomStream(seed, "vp/deal").shuffled(full_deck())[:5]


@functools.cache
def seed_where(wanted: Callable[[bytes], bool]) -> bytes:
    for i in range(50_000):
        seed = hashlib.sha256(f"video-poker-bad-input/{i}".encode()).digest()
        if wanted(seed):
            return seed
    raise AssertionError(f"no seed in the series satisfies {wanted.__name__}")


def pays_as_dealt(seed: bytes) -> bool:
    """The deal already pays, so the 4-line game's proposed hold keeps a win on every line."""
    return evaluate(dealt_cards(seed)) is not HandRank.NOTHING


def deals_four_of_a_kind(seed: bytes) -> bool:
    return evaluate(dealt_cards(seed)) is HandRank.FOUR_OF_A_KIND


def loses_if_all_discarded(seed: bytes) -> bool:
    """Discarding all five, no line of the small 4-line bet pays."""
    from games.video_poker.engine import deal, draw

    return draw(deal(VARIANTS["jb-4line"], 10, 1, 4, seed), (), seed).win == 0


def red_dog_spread(seed: bytes) -> bool:
    """A Red Dog deal that waits for the player's raise or see."""
    deck = shuffled_deck(seed)
    return spread_of(deck[0].rank, deck[1].rank) not in (0, None)


def open_session(app: Casino, player: str = "ann", buy_in: int = BUY_IN) -> str:
    return open_funded_session(app, player, buy_in, deposit=1_000_000)


def won_round(seeded: Seeded, bet: tuple[str, int, int, int] = SMALL) -> tuple[Casino, str]:
    """A session whose round has drawn a win that waits for collect / double."""
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, *bet)
    won = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    assert won.view["phase"] == "win-pending" and won.view["win"] > 0
    return app, sid


# -- the deal -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["jb-4line", "jb-multi"])
def test_coins_outside_one_to_five_are_refused(seeded: Seeded, store: Store, variant: str) -> None:
    app = seeded()
    sid = open_session(app)
    lines = VARIANTS[variant].lines[0]

    for coins in (0, 6, -1, True, 2.0, "5", None):
        err = assert_refused(
            store, InvalidCoins, app.vp_deal, f"deal-{coins!r}", sid, variant, 10, coins, lines
        )
        assert err.code == "invalid-coins" and repr(coins) in err.message

    assert app.session_balance(sid) == BUY_IN and app.open_round(sid) is None


def test_a_coin_value_the_variant_does_not_offer_is_refused(seeded: Seeded, store: Store) -> None:
    app = seeded()
    sid = open_session(app)

    for coin_value in (0, 15, 1_000, -10, 10.0, True, "10", None):
        rid = f"deal-{coin_value!r}"
        err = assert_refused(
            store, InvalidCoinValue, app.vp_deal, rid, sid, "jb-4line", coin_value, 1, 4
        )
        assert err.code == "invalid-coin-value" and repr(coin_value) in err.message

    assert app.session_balance(sid) == BUY_IN


@pytest.mark.parametrize(("variant", "lines"), UNOFFERED_LINES)
def test_a_line_count_the_variant_does_not_offer_is_refused(
    seeded: Seeded, store: Store, variant: str, lines: Any
) -> None:
    app = seeded()
    sid = open_session(app)

    err = assert_refused(store, InvalidLines, app.vp_deal, "deal", sid, variant, 10, 1, lines)

    assert err.code == "invalid-lines" and repr(lines) in err.message
    assert app.session_balance(sid) == BUY_IN


def test_an_unknown_variant_is_refused_naming_the_variants_on_offer(
    seeded: Seeded, store: Store
) -> None:
    app = seeded()
    sid = open_session(app)

    for variant in ("jb-5line", "JB-4LINE", "", None):
        err = assert_refused(
            store, GameRuleError, app.vp_deal, f"deal-{variant!r}", sid, variant, 10, 1, 4
        )
        assert repr(variant) in err.message and "jb-4line" in err.message

    assert app.session_balance(sid) == BUY_IN


@pytest.mark.parametrize("variant", [["jb-4line"], {"id": "jb-4line"}, 4], ids=repr)
def test_a_variant_that_is_not_text_is_refused_with_a_typed_error(
    seeded: Seeded, store: Store, variant: Any
) -> None:
    app = seeded()
    sid = open_session(app)

    assert_refused(store, GameRuleError, app.vp_deal, "deal", sid, variant, 10, 1, 4)


def test_a_deal_above_the_session_balance_is_refused(seeded: Seeded, store: Store) -> None:
    app = seeded()
    sid = open_session(app, buy_in=1_000)

    err = assert_refused(store, InsufficientFunds, app.vp_deal, "deal", sid, "jb-4line", 100, 3, 4)

    assert err.code == "insufficient-funds" and err.ids == {"session_id": sid}
    assert app.session_balance(sid) == 1_000


def test_a_deal_while_a_round_is_open_is_refused(seeded: Seeded, store: Store) -> None:
    app = seeded()
    sid = open_session(app)
    dealt = app.vp_deal("deal-1", sid, *SMALL)

    err = assert_refused(store, SessionBusy, app.vp_deal, "deal-2", sid, *SMALL)

    assert err.code == "session-busy"
    assert app.open_round(sid).view == dealt.view  # type: ignore[union-attr]
    assert app.session_balance(sid) == BUY_IN - 10 * 1 * 4


def test_a_deal_or_decision_in_an_unknown_or_closed_session_is_refused(
    seeded: Seeded, store: Store
) -> None:
    app = seeded()
    sid = open_session(app)
    app.close_session("close", sid)

    for session_id in (str(uuid.uuid4()), "not-a-session"):
        assert_refused(store, SessionNotFound, app.vp_deal, "deal", session_id, *SMALL)
        assert_refused(store, SessionNotFound, app.vp_act, "act", session_id, ["collect"])
    assert_refused(store, SessionClosed, app.vp_deal, "deal", sid, *SMALL)
    assert_refused(store, SessionClosed, app.vp_act, "act", sid, ["draw", []])


# -- holds and the draw -------------------------------------------------------------------


def test_holds_out_of_range_or_repeated_are_refused(seeded: Seeded, store: Store) -> None:
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, *SMALL)

    for holds in ([5], [-1], [0, 0], [1, 3, 1], [0, 1, 2, 3, 4, 5], [True], [0.0], ["0"]):
        err = assert_refused(
            store, InvalidHolds, app.vp_act, f"draw-{holds!r}", sid, ["draw", holds]
        )
        assert err.code == "invalid-holds"

    rnd = app.open_round(sid)
    assert rnd is not None and rnd.view == dealt.view and rnd.decisions == []
    assert app.vp_act("draw", sid, ["draw", [4, 0]]).view["holds"] == [0, 4]


def test_a_second_draw_while_the_win_is_pending_is_refused(seeded: Seeded, store: Store) -> None:
    app, sid = won_round(seeded)
    before = app.open_round(sid)

    err = assert_refused(store, ActionOutOfPhase, app.vp_act, "draw-2", sid, ["draw", []])

    assert err.code == "action-out-of-phase" and "win-pending" in err.message
    assert app.open_round(sid).view == before.view  # type: ignore[union-attr]


def test_a_draw_or_double_after_a_losing_round_settled_is_refused(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(loses_if_all_discarded))
    sid = open_session(app)
    app.vp_deal("deal", sid, *SMALL)
    lost = app.vp_act("draw", sid, ["draw", []])
    assert lost.status == "settled" and lost.payout == 0

    for decision in ALL_DECISIONS:
        err = assert_refused(store, RoundNotOpen, app.vp_act, f"again-{decision}", sid, decision)
        assert err.code == "round-not-open"

    assert app.session_balance(sid) == lost.balance


@pytest.mark.parametrize("decision", [["double"], ["half-double"], ["collect"], ["pick", 0]])
def test_double_up_collect_or_pick_before_the_draw_is_refused(
    seeded: Seeded, store: Store, decision: list[Any]
) -> None:
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, *SMALL)

    err = assert_refused(store, ActionOutOfPhase, app.vp_act, "act", sid, decision)

    assert err.code == "action-out-of-phase" and "dealt" in err.message
    assert app.open_round(sid).view == dealt.view  # type: ignore[union-attr]


def test_a_malformed_decision_is_refused(seeded: Seeded, store: Store) -> None:
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    app.vp_deal("deal", sid, *SMALL)

    for decision in (
        ["fold"],
        [],
        ["draw", "01"],
        ["draw", None],
        ["draw", [0], [1]],
        ["collect", 1],
        ["double", 0],
        ["half-double", True],
        ["pick"],
        ["pick", 0, 1],
        ["DRAW", []],
    ):
        err = assert_refused(store, InvalidDecision, app.vp_act, f"act-{decision!r}", sid, decision)
        assert err.code == "invalid-decision"


@pytest.mark.parametrize("decision", [None, 5, "collect"], ids=repr)
def test_a_decision_that_is_not_a_list_is_refused_with_a_typed_error(
    seeded: Seeded, store: Store, decision: Any
) -> None:
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    app.vp_deal("deal", sid, *SMALL)

    assert_refused(store, InvalidDecision, app.vp_act, "act", sid, decision)


# -- double-up ----------------------------------------------------------------------------


def test_a_pick_that_is_not_one_of_the_four_face_down_cards_is_refused(
    seeded: Seeded, store: Store
) -> None:
    app, sid = won_round(seeded)
    doubling = app.vp_act("double", sid, ["double"])

    for index in (4, -1, 52):
        err = assert_refused(store, InvalidPick, app.vp_act, f"pick-{index}", sid, ["pick", index])
        assert err.code == "invalid-pick" and repr(index) in err.message
    for not_an_index in ("0", True, 1.0, None):
        decision = ["pick", not_an_index]
        assert_refused(store, InvalidDecision, app.vp_act, f"{decision!r}", sid, decision)

    assert app.open_round(sid).view == doubling.view  # type: ignore[union-attr]
    assert app.vp_act("pick", sid, ["pick", 3]).view["double_up"][0]["index"] == 3


def test_a_pick_with_no_double_up_pending_is_refused(seeded: Seeded, store: Store) -> None:
    app, sid = won_round(seeded)

    err = assert_refused(store, ActionOutOfPhase, app.vp_act, "pick", sid, ["pick", 0])

    assert err.code == "action-out-of-phase" and "win-pending" in err.message


@pytest.mark.parametrize("decision", [["double"], ["half-double"], ["collect"], ["draw", []]])
def test_anything_but_a_pick_while_a_pick_is_pending_is_refused(
    seeded: Seeded, store: Store, decision: list[Any]
) -> None:
    app, sid = won_round(seeded)
    doubling = app.vp_act("double", sid, ["double"])

    err = assert_refused(store, ActionOutOfPhase, app.vp_act, "act", sid, decision)

    assert err.code == "action-out-of-phase" and "double-pick" in err.message
    assert app.open_round(sid).view == doubling.view  # type: ignore[union-attr]


def test_double_up_is_not_offered_when_the_win_exceeds_the_limit(
    seeded: Seeded, store: Store
) -> None:
    # Four of a kind dealt and held on four lines at 5 coins of 5.00 pays 4 x 125 x 500 =
    # 250,000, above jb-4line's double-up limit (seed 000: offered only while the win does
    # not exceed the limit).
    app = seeded(seed_where(deals_four_of_a_kind))
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, "jb-4line", 500, 5, 4)
    won = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    limit = VARIANTS["jb-4line"].double_up_limit
    assert len(dealt.view["recommended"]) == 4 and won.view["win"] == 250_000 > limit

    for decision in (["double"], ["half-double"]):
        err = assert_refused(store, DoubleUpNotOffered, app.vp_act, f"{decision}", sid, decision)
        assert err.code == "double-up-not-offered" and str(limit) in err.message

    collected = app.vp_act("collect", sid, ["collect"])
    assert collected.payout == 250_000 and collected.view["double_up"] == []


def test_the_multi_hand_game_offers_no_double_up(seeded: Seeded, store: Store) -> None:
    # Seed 004 describes no gamble feature: jb-multi's double-up limit is 0.
    app = seeded(seed_where(pays_as_dealt))
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, "jb-multi", 10, 1, 3)
    won = app.vp_act("draw", sid, ["draw", [0, 1, 2, 3, 4]])  # keep the paying deal
    # Nothing to choose after a win: the draw settles it (no collect step).
    assert won.view["phase"] == "settled" and won.status == "settled", dealt.view
    assert won.payout == won.view["win"] > 0
    assert app.session_balance(sid) == won.balance

    for decision in (["double"], ["half-double"], ["collect"]):
        err = assert_refused(store, RoundNotOpen, app.vp_act, f"{decision}", sid, decision)
        assert err.code == "round-not-open"
    assert app.session_balance(sid) == won.balance


# -- no round, or another game's round ------------------------------------------------------


def test_a_video_poker_decision_with_no_open_round_is_refused(seeded: Seeded, store: Store) -> None:
    app = seeded()
    sid = open_session(app)

    for decision in ALL_DECISIONS:
        err = assert_refused(store, RoundNotOpen, app.vp_act, f"act-{decision}", sid, decision)
        assert err.code == "round-not-open" and err.ids == {"session_id": sid}
        assert err.message == f"no round is open in session {sid}"


def test_a_video_poker_action_on_an_open_red_dog_round_is_refused(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(red_dog_spread))
    sid = open_session(app)
    bet = app.red_dog_bet("bet", sid, 200)
    assert bet.status == "open"

    for decision in ALL_DECISIONS:
        err = assert_refused(
            store, DecisionNotForThisGame, app.vp_act, f"act-{decision}", sid, decision
        )
        assert err.code == "decision-not-for-this-game"
        assert err.ids == {"session_id": sid, "game_code": bet.code}
        assert f"the open round {bet.code} is red-dog" in err.message
    assert_refused(store, SessionBusy, app.vp_deal, "deal", sid, *SMALL)

    rnd = app.open_round(sid)
    assert rnd is not None and rnd.code == bet.code and rnd.view == bet.view
    assert app.session_balance(sid) == BUY_IN - 200
