"""Jacks or Better rounds through the real Casino (DESIGN §1.4-1.5, §5.1), on SQLite and
PostgreSQL.

The stake debited at the deal, each line settled on its own on the paytable column, the
recommended holds in the Started event, one replacement deck per line, double-up through
the ledger (only the final amount is ever credited), automatic completion on close, and
resuming after a restart. Where a test needs a particular deal it opens the Casino with a
fake seed source (:class:`ChosenSeeds`); the cards then come from the real engine, and the
test re-derives them itself from the documented stream labels (``vp/deal``,
``vp/line/{i}``, ``vp/double/{n}``) with :class:`games.rng.RandomStream`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
from collections.abc import Callable
from typing import Any

import pytest

from audit_cli.rounds import check_round
from audit_cli.rows import Row, read_rows
from games.cards import Card, full_deck, parse_cards
from games.poker import HandRank, evaluate
from games.rng import RandomStream
from games.video_poker import double_up
from games.video_poker.engine import VideoPokerState
from games.video_poker.strategy import optimal_hold
from games.video_poker.variants import VARIANTS
from ledger import envelope
from ledger.casino import Casino
from ledger.results import RoundPlayed
from ledger.rounds import round_id_for
from tests.conftest import Seeded, Store, WithCards
from tests.helpers import open_session as open_funded_session

DEPOSIT = 1_000_000
BUY_IN = 20_000
ROUND = "croupier/round/"
STARTED, ACTED, SETTLED = ROUND + "started@1", ROUND + "acted@1", ROUND + "settled@1"
CODE = re.compile(r"^(JB4|JBM)-\d{8}-\d{6}-[0-9A-HJKMNP-TV-Z]{4}$")

# DESIGN §5.1 (seed 000): total paid per line, x coin value, for 1..5 coins.
PAYTABLE: dict[str, tuple[int, int, int, int, int]] = {
    "royal-flush": (250, 500, 750, 1000, 4000),
    "straight-flush": (50, 100, 150, 200, 250),
    "four-of-a-kind": (25, 50, 75, 100, 125),
    "full-house": (9, 18, 27, 36, 45),
    "flush": (6, 12, 18, 24, 30),
    "straight": (4, 8, 12, 16, 20),
    "three-of-a-kind": (3, 6, 9, 12, 15),
    "two-pair": (2, 4, 6, 8, 10),
    "jacks-or-better": (1, 2, 3, 4, 5),
    "nothing": (0, 0, 0, 0, 0),
}

Bet = tuple[str, int, int, int]  # variant, coin value, coins per line, lines
BETS: list[Bet] = [
    ("jb-4line", 10, 1, 4),
    ("jb-4line", 500, 5, 4),
    ("jb-multi", 20, 3, 10),
    ("jb-multi", 200, 2, 1),
]
SMALL_4LINE: Bet = ("jb-4line", 10, 1, 4)
BETS_4LINE = [b for b in BETS if b[0] == "jb-4line"]
BETS_MULTI = [b for b in BETS if b[0] == "jb-multi"]
# seed 000, double-up: lower loses the staked amount, equal pushes, higher doubles it.
RELATIONS = {"higher": operator.gt, "lower": operator.lt, "equal": operator.eq}


# -- the documented streams, re-derived here ---------------------------------------------


def dealt_cards(seed: bytes) -> list[Card]:
    return RandomStream(seed, "vp/deal").shuffled(full_deck())[:5]


def line_deck(seed: bytes, line: int, dealt: list[Card]) -> list[Card]:
    rest = [c for c in full_deck() if c not in dealt]
    return RandomStream(seed, f"vp/line/{line}").shuffled(rest)


def double_deck(seed: bytes, step: int) -> list[Card]:
    """Dealer's card ``[0]``, the four face-down cards ``[1:5]``."""
    return RandomStream(seed, f"vp/double/{step}").shuffled(full_deck())


def face_down_index(seed: bytes, step: int, relation: str) -> int | None:
    """The first face-down card of double-up step ``step`` that is ``relation``
    ("higher", "lower", "equal") to the dealer's card, by rank."""
    deck = double_deck(seed, step)
    compare = RELATIONS[relation]
    for i, card in enumerate(deck[1:5]):
        if compare(card.rank, deck[0].rank):
            return i
    return None


# -- seeds --------------------------------------------------------------------------------


def engine_round(bet: Bet, seed: bytes, decisions: list[list[Any]]) -> VideoPokerState:
    variant, coin_value, coins, lines = bet
    return double_up.replay(VARIANTS[variant], coin_value, coins, lines, decisions, seed)


def drawn_with_recommended(bet: Bet, seed: bytes) -> VideoPokerState:
    dealt = engine_round(bet, seed, [])
    return engine_round(bet, seed, [["draw", list(dealt.recommended)]])


@functools.cache
def seed_where(wanted: Callable[..., bool], *args: Any) -> bytes:
    """The first of a fixed series of random-looking seeds for which ``wanted(seed, *args)``."""
    for i in range(20_000):
        seed = hashlib.sha256(f"video-poker-rounds/{i}".encode()).digest()
        if wanted(seed, *args):
            return seed
    raise AssertionError(f"no seed in the series satisfies {wanted.__name__}{args}")


def pays_unevenly(seed: bytes, bet: Bet) -> bool:
    """The recommended holds win, and (with several lines) the lines end on different hands."""
    done = drawn_with_recommended(bet, seed)
    return done.win > 0 and len({ln.rank for ln in done.line_results}) >= min(2, bet[3])


def recommended_wins(seed: bytes, bet: Bet) -> bool:
    return drawn_with_recommended(bet, seed).win > 0


def one_high_pair_of(cards: list[Card]) -> bool:
    return evaluate(cards) is HandRank.JACKS_OR_BETTER


def replacements_repeat(seed: bytes, lines: int) -> bool:
    """Holding only the first card, some replacement card lands on two lines."""
    dealt = dealt_cards(seed)
    drawn = [line_deck(seed, i, dealt)[:4] for i in range(lines)]
    return len({c for cards in drawn for c in cards}) < 4 * lines


def wins_then(seed: bytes, *relations: str) -> bool:
    """The deal pays as dealt, and double-up step ``n`` has a face-down card that is
    ``relations[n]`` to the dealer's card."""
    return evaluate(dealt_cards(seed)) is not HandRank.NOTHING and all(
        face_down_index(seed, n, r) is not None for n, r in enumerate(relations)
    )


def first_card_beats_dealer(seed: bytes) -> bool:
    deck = double_deck(seed, 0)
    return evaluate(dealt_cards(seed)) is not HandRank.NOTHING and deck[1].rank > deck[0].rank


# -- helpers ------------------------------------------------------------------------------


def open_session(app: Casino, player: str = "ann", buy_in: int = BUY_IN) -> str:
    return open_funded_session(app, player, buy_in, deposit=DEPOSIT)


def deal(app: Casino, sid: str, bet: Bet, rid: str = "deal") -> RoundPlayed:
    return app.vp_deal(rid, sid, *bet)


def stake_of(bet: Bet) -> int:
    _, coin_value, coins, lines = bet
    return coin_value * coins * lines


def payload(row: Row) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc


def round_events(store: Store, code: str) -> list[tuple[str, dict[str, Any]]]:
    """(topic, payload) of each stored event of one round, oldest first."""
    rid = str(round_id_for(code))
    return [(r.topic, payload(r)) for r in read_rows(store.db) if r.originator_id == rid]


def acted(store: Store, code: str) -> list[tuple[list[Any], bool]]:
    return [(d["decision"], d["automatic"]) for t, d in round_events(store, code) if t == ACTED]


def money_moves(store: Store, code: str) -> list[tuple[str, int]]:
    """Every session movement that names the round: (kind, amount), oldest first."""
    moves = []
    for r in read_rows(store.db):
        if r.topic.startswith("croupier/session/"):
            doc = payload(r)
            if doc.get("game_code") == code and "amount" in doc:
                moves.append((r.topic.split("/")[2].split("@")[0], doc["amount"]))
    return moves


def assert_round_checks(store: Store, code: str) -> None:
    report = check_round(store.db, code)
    assert report.ok and report.status == "settled", report.problems


# -- stakes and lines ---------------------------------------------------------------------


@pytest.mark.parametrize("bet", BETS, ids=lambda b: "-".join(map(str, b)))
def test_the_total_stake_is_coin_value_times_coins_times_lines_debited_once_at_the_deal(
    seeded: Seeded, store: Store, bet: Bet
) -> None:
    app = seeded(seed_where(pays_unevenly, bet))
    sid = open_session(app)

    dealt = deal(app, sid, bet)

    stake = stake_of(bet)
    assert dealt.status == "open" and dealt.view["phase"] == "dealt"
    assert dealt.stake == dealt.staked == stake
    assert dealt.balance == app.session_balance(sid) == BUY_IN - stake
    assert money_moves(store, dealt.code) == [("stake-debited", stake)]
    match = CODE.match(dealt.code)
    assert match and match.group(1) == {"jb-4line": "JB4", "jb-multi": "JBM"}[bet[0]]


@pytest.mark.parametrize("bet", BETS_4LINE, ids=lambda b: "-".join(map(str, b)))
def test_each_line_is_paid_on_the_paytable_column_and_the_credited_win_is_their_sum(
    seeded: Seeded, store: Store, bet: Bet
) -> None:
    _, coin_value, coins, lines = bet
    app = seeded(seed_where(pays_unevenly, bet))
    sid = open_session(app)
    dealt = deal(app, sid, bet)

    drawn = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])

    view = drawn.view
    assert len(view["lines"]) == lines
    for line in view["lines"]:
        rank = evaluate([Card.parse(c) for c in line["cards"]]).value
        assert line["rank"] == rank
        assert line["win"] == PAYTABLE[rank][coins - 1] * coin_value
    total = sum(line["win"] for line in view["lines"])
    assert total > 0 and view["line_win"] == view["win"] == total
    if lines > 1:
        assert len({line["rank"] for line in view["lines"]}) > 1  # lines settle separately
    # A win waits for collect (or double-up): nothing is credited yet.
    assert drawn.status == "open" and view["phase"] == "win-pending"
    assert app.session_balance(sid) == BUY_IN - stake_of(bet)

    collected = app.vp_act("collect", sid, ["collect"])

    assert collected.status == "settled" and collected.payout == total
    assert collected.outcome == "win"
    assert app.session_balance(sid) == BUY_IN - stake_of(bet) + total == collected.balance
    assert money_moves(store, dealt.code) == [
        ("stake-debited", stake_of(bet)),
        ("win-credited", total),
    ]
    assert_round_checks(store, dealt.code)


@pytest.mark.parametrize("bet", BETS_MULTI, ids=lambda b: "-".join(map(str, b)))
def test_a_multi_hand_win_is_settled_and_credited_by_the_draw_without_a_collect(
    seeded: Seeded, store: Store, bet: Bet
) -> None:
    # Seed 004 offers no double-up, so after a win there is nothing to choose: the draw
    # settles the round and credits the sum of the lines (jb-multi rules version 2).
    _, coin_value, coins, lines = bet
    app = seeded(seed_where(pays_unevenly, bet))
    sid = open_session(app)
    dealt = deal(app, sid, bet)

    drawn = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])

    view = drawn.view
    assert len(view["lines"]) == lines
    for line in view["lines"]:
        rank = evaluate([Card.parse(c) for c in line["cards"]]).value
        assert line["win"] == PAYTABLE[rank][coins - 1] * coin_value
    total = sum(line["win"] for line in view["lines"])
    assert total > 0 and view["line_win"] == view["win"] == total
    assert drawn.status == "settled" and view["phase"] == "settled"
    assert drawn.payout == total and drawn.outcome == "win" and drawn.seed
    assert app.session_balance(sid) == BUY_IN - stake_of(bet) + total == drawn.balance
    assert app.open_round(sid) is None
    assert acted(store, dealt.code) == [(["draw", dealt.view["recommended"]], False)]
    assert money_moves(store, dealt.code) == [
        ("stake-debited", stake_of(bet)),
        ("win-credited", total),
    ]
    assert_round_checks(store, dealt.code)


def test_a_losing_draw_settles_at_once_and_credits_nothing(seeded: Seeded, store: Store) -> None:
    bet = SMALL_4LINE
    seed = seed_where(lambda s: engine_round(bet, s, [["draw", []]]).win == 0)
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, bet)

    drawn = app.vp_act("draw", sid, ["draw", []])

    assert drawn.status == "settled" and drawn.payout == 0 and drawn.outcome == "lose"
    assert all(line["win"] == 0 for line in drawn.view["lines"])
    assert app.session_balance(sid) == BUY_IN - stake_of(bet)
    assert money_moves(store, dealt.code) == [("stake-debited", stake_of(bet))]
    assert app.open_round(sid) is None
    assert_round_checks(store, dealt.code)


def test_the_four_line_game_proposes_holding_the_cards_that_already_win(
    with_cards: WithCards, store: Store
) -> None:
    app = with_cards({"vp/deal": "4c Jh 9s Js 7d"})  # one pair of jacks: a paying hand
    sid = open_session(app)

    dealt = deal(app, sid, SMALL_4LINE)

    cards = list(parse_cards("4c Jh 9s Js 7d"))
    assert one_high_pair_of(cards)
    ranks = [c.rank for c in cards]
    pair = [p for p in range(5) if ranks.count(ranks[p]) == 2]  # seed 000: hold the winners
    [started] = [d for t, d in round_events(store, dealt.code) if t == STARTED]
    assert started["view"]["dealt"] == [str(c) for c in cards]
    assert started["view"]["recommended"] == pair == dealt.view["recommended"]
    assert started["view"]["holds"] is None


def test_the_four_line_game_proposes_no_hold_for_a_hand_that_pays_nothing(
    with_cards: WithCards, store: Store
) -> None:
    app = with_cards({"vp/deal": "2c 5d 9h Jc Ks"})  # no pair, no straight, no flush
    sid = open_session(app)

    dealt = deal(app, sid, SMALL_4LINE)

    [started] = [d for t, d in round_events(store, dealt.code) if t == STARTED]
    assert started["view"]["recommended"] == []


def test_the_multi_hand_game_records_its_recommended_holds_in_the_started_event(
    seeded: Seeded, store: Store
) -> None:
    bet: Bet = ("jb-multi", 50, 5, 3)
    seed = seed_where(pays_unevenly, bet)
    app = seeded(seed)
    sid = open_session(app)

    dealt = deal(app, sid, bet)

    best = optimal_hold(dealt_cards(seed), VARIANTS["jb-multi"].paytable, 5).hold
    [started] = [d for t, d in round_events(store, dealt.code) if t == STARTED]
    assert started["view"]["recommended"] == sorted(best) == dealt.view["recommended"]
    assert started["view"]["dealt"] == [str(c) for c in dealt_cards(seed)]


@pytest.mark.parametrize(("variant", "lines"), [("jb-4line", 4), ("jb-multi", 10)])
def test_every_line_draws_from_its_own_deck_so_a_card_may_repeat_across_lines_but_not_within_one(
    seeded: Seeded, store: Store, variant: str, lines: int
) -> None:
    seed = seed_where(replacements_repeat, lines)
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, (variant, 10, 1, lines))

    drawn = app.vp_act("draw", sid, ["draw", [0]])  # the player's own hold

    cards = dealt_cards(seed)
    shown = [[Card.parse(c) for c in line["cards"]] for line in drawn.view["lines"]]
    for i, line in enumerate(shown):
        assert len(set(line)) == 5, f"line {i} holds a card twice: {line}"
        assert line[0] == cards[0]  # the hold is common to every line
        assert line[1:] == line_deck(seed, i, cards)[:4]  # this line's own deck, top down
        assert not set(line[1:]) & set(cards)
    replaced = [tuple(line[1:]) for line in shown]
    assert len(set(replaced)) == lines  # different decks, different draws
    on_lines = [sum(card in r for r in replaced) for card in {c for r in replaced for c in r}]
    assert max(on_lines) >= 2  # yet one card can land on several lines
    if drawn.status == "open":
        app.vp_act("collect", sid, ["collect"])
    assert_round_checks(store, dealt.code)


# -- double-up ----------------------------------------------------------------------------


def test_double_up_steps_keep_their_bet_type_and_only_the_final_amount_is_credited(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(wins_then, "higher", "lower")
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, SMALL_4LINE)
    after_stake = BUY_IN - stake_of(SMALL_4LINE)
    won = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    win = won.view["win"]
    assert win > 0

    doubling = app.vp_act("double", sid, ["double"])
    pending = doubling.view["double_up"][-1]
    assert doubling.view["phase"] == "double-pick" and pending["cards"] == []
    assert pending["dealer_card"] == str(double_deck(seed, 0)[0])
    doubled = app.vp_act("pick-1", sid, ["pick", face_down_index(seed, 0, "higher")])
    assert doubled.view["win"] == 2 * win and doubled.view["phase"] == "win-pending"
    app.vp_act("half-double", sid, ["half-double"])
    lost_half = app.vp_act("pick-2", sid, ["pick", face_down_index(seed, 1, "lower")])

    # Nothing reached the session during the steps; the settlement credits the banked half.
    for step in (won, doubling, doubled):
        assert step.status == "open" and step.balance == after_stake
    assert lost_half.status == "settled" and lost_half.payout == win
    assert lost_half.balance == app.session_balance(sid) == after_stake + win
    assert money_moves(store, dealt.code) == [
        ("stake-debited", stake_of(SMALL_4LINE)),
        ("win-credited", win),
    ]
    steps = lost_half.view["double_up"]
    assert [
        (s["n"], s["bet_type"], s["win_before"], s["staked"], s["banked"], s["result"])
        for s in steps
    ] == [(0, "double", win, win, 0, "win"), (1, "half-double", 2 * win, win, win, "lose")]
    assert [s["amount_after"] for s in steps] == [2 * win, win]
    for n, s in enumerate(steps):
        deck = double_deck(seed, n)
        assert s["dealer_card"] == str(deck[0]) and s["cards"] == [str(c) for c in deck[1:5]]
    [settled] = [d for t, d in round_events(store, dealt.code) if t == SETTLED]
    assert settled["view"]["double_up"] == steps and settled["payout"] == win
    assert_round_checks(store, dealt.code)


def test_a_lost_double_forfeits_the_whole_win_and_credits_nothing(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(wins_then, "lower")
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, SMALL_4LINE)
    app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    app.vp_act("double", sid, ["double"])

    lost = app.vp_act("pick", sid, ["pick", face_down_index(seed, 0, "lower")])

    assert lost.status == "settled" and lost.payout == 0 and lost.outcome == "lose"
    assert lost.view["double_up"][0]["result"] == "lose"
    assert app.session_balance(sid) == BUY_IN - stake_of(SMALL_4LINE)
    assert money_moves(store, dealt.code) == [("stake-debited", stake_of(SMALL_4LINE))]
    assert_round_checks(store, dealt.code)


def test_a_won_half_double_credits_the_banked_half_plus_twice_the_staked_half(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(wins_then, "higher")
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, SMALL_4LINE)
    win = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]]).view["win"]

    halved = app.vp_act("half-double", sid, ["half-double"])
    step = halved.view["double_up"][0]
    # The staked half rounds down and the odd unit stays banked (engine: half_stake).
    assert (step["staked"], step["banked"]) == (win // 2, win - win // 2)
    picked = app.vp_act("pick", sid, ["pick", face_down_index(seed, 0, "higher")])
    assert picked.view["phase"] == "win-pending" and picked.balance == halved.balance
    collected = app.vp_act("collect", sid, ["collect"])

    expected = step["banked"] + 2 * step["staked"]
    assert collected.payout == expected == collected.view["win"]
    assert collected.view["double_up"][0]["amount_after"] == expected
    assert money_moves(store, dealt.code) == [
        ("stake-debited", stake_of(SMALL_4LINE)),
        ("win-credited", expected),
    ]
    assert app.session_balance(sid) == BUY_IN - stake_of(SMALL_4LINE) + expected
    assert_round_checks(store, dealt.code)


def test_a_double_up_push_keeps_the_win_and_the_player_decides_again(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(wins_then, "equal")
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, SMALL_4LINE)
    win = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]]).view["win"]
    app.vp_act("double", sid, ["double"])

    pushed = app.vp_act("pick", sid, ["pick", face_down_index(seed, 0, "equal")])

    assert pushed.status == "open" and pushed.view["phase"] == "win-pending"
    assert pushed.view["win"] == win and pushed.view["double_up"][0]["result"] == "push"
    collected = app.vp_act("collect", sid, ["collect"])
    assert collected.payout == win
    assert money_moves(store, dealt.code)[-1] == ("win-credited", win)
    assert_round_checks(store, dealt.code)


# -- abandoned and interrupted rounds -----------------------------------------------------


@pytest.mark.parametrize("bet", [SMALL_4LINE, ("jb-multi", 10, 1, 3)], ids=["4line", "multi"])
def test_closing_a_session_draws_an_abandoned_deal_with_the_recommended_holds_and_collects(
    seeded: Seeded, store: Store, bet: Bet
) -> None:
    seed = seed_where(recommended_wins, bet)
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, bet)
    recommended = dealt.view["recommended"]

    closed = app.close_session("close", sid)

    # jb-4line's win waits for collect (double-up is on offer); jb-multi's draw settles it.
    collect = [(["collect"], True)] if bet[0] == "jb-4line" else []
    assert acted(store, dealt.code) == [(["draw", recommended], True), *collect]
    win = drawn_with_recommended(bet, seed).win
    rnd = app.find_round(dealt.code)
    assert rnd.status == "settled" and rnd.payout == win > 0
    assert rnd.view["holds"] == recommended
    assert closed.final_balance == BUY_IN - stake_of(bet) + win
    assert app.account_balance("ann") == DEPOSIT - BUY_IN + closed.final_balance
    assert money_moves(store, dealt.code) == [
        ("stake-debited", stake_of(bet)),
        ("win-credited", win),
    ]
    assert_round_checks(store, dealt.code)


def test_closing_a_session_during_a_double_up_pick_turns_the_first_card_and_collects(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(first_card_beats_dealer)
    app = seeded(seed)
    sid = open_session(app)
    dealt = deal(app, sid, SMALL_4LINE)
    holds = dealt.view["recommended"]
    win = app.vp_act("draw", sid, ["draw", holds]).view["win"]
    app.vp_act("double", sid, ["double"])

    closed = app.close_session("close", sid)

    assert acted(store, dealt.code) == [
        (["draw", holds], False),
        (["double"], False),
        (["pick", 0], True),
        (["collect"], True),
    ]
    assert app.find_round(dealt.code).payout == 2 * win
    assert closed.final_balance == BUY_IN - stake_of(SMALL_4LINE) + 2 * win
    assert_round_checks(store, dealt.code)


def test_an_interrupted_round_resumes_after_a_restart_with_the_same_cards(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(wins_then, "higher")
    first = seeded(seed)
    sid = open_session(first)
    dealt = deal(first, sid, SMALL_4LINE)
    first.close()

    second = store.open()
    rnd = second.open_round(sid)
    assert rnd is not None and rnd.code == dealt.code
    assert rnd.view == dealt.view and rnd.view["dealt"] == [str(c) for c in dealt_cards(seed)]
    assert deal(second, sid, SMALL_4LINE) == dealt  # the retried deal: same answer, no new round
    drawn = second.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    doubling = second.vp_act("double", sid, ["double"])
    second.close()

    third = store.open()
    resumed = third.open_round(sid)
    assert resumed is not None and resumed.view == doubling.view
    done = third.vp_act("pick", sid, ["pick", face_down_index(seed, 0, "higher")])
    done = third.vp_act("collect", sid, ["collect"])

    cards = dealt_cards(seed)
    held = dealt.view["recommended"]
    for i, line in enumerate(done.view["lines"]):
        expected = list(cards)
        deck = iter(line_deck(seed, i, cards))
        for p in range(5):
            if p not in held:
                expected[p] = next(deck)
        assert line["cards"] == [str(c) for c in expected]
    assert done.view["lines"] == drawn.view["lines"]
    assert done.payout == 2 * drawn.view["win"] and done.seed == seed.hex()
    assert third.session_balance(sid) == BUY_IN - stake_of(SMALL_4LINE) + done.payout
    assert_round_checks(store, dealt.code)
