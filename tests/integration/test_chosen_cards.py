"""A test deals a named situation through the real engines with chosen cards (a card source,
``bootstrap(cards=...)``), instead of searching seeds, and such a round can never pass as
certified: its first event records the chosen cards, ``audit-cli round`` re-derives it from
them and reports that its cards were chosen (exit 1), and ``audit-cli rtp`` leaves it out of
the tally and says so. Seed-dealt rounds record ``chosen_cards: null``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit_cli.main import main as audit_cli
from audit_cli.rounds import check_round
from audit_cli.rows import read_rows
from audit_cli.rtp import rtp_report
from games.deal import ChosenCardsError
from games.poker import HandRank
from games.red_dog.engine import DECK_LABEL, THREE_OF_A_KIND_PAYS
from games.video_poker.engine import DEAL_LABEL, line_label
from games.video_poker.variants import VARIANTS
from ledger import contracts, envelope
from ledger.rounds import round_id_for
from tests.conftest import Seeded, Store, WithCards
from tests.helpers import assert_refused, open_session
from tests.integration.test_red_dog_rounds import rewrite_settled_payout

BET = 200
CHOSEN = "chosen_cards"


def started_event(store: Store, code: str) -> dict[str, Any]:
    rid = str(round_id_for(code))
    [row] = [
        r
        for r in read_rows(store.db)
        if r.originator_id == rid and r.topic == contracts.ROUND_STARTED
    ]
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc


def test_red_dog_deals_a_chosen_three_of_a_kind_and_pays_11_to_1(
    with_cards: WithCards, store: Store
) -> None:
    app = with_cards({DECK_LABEL: "7h 7d 7s"})
    sid = open_session(app)

    done = app.red_dog_bet("bet", sid, BET)

    # seed 003: a pair draws the third card at once; the same rank again pays 11:1.
    assert done.view["cards"] == ["7h", "7d", "7s"] and done.status == "settled"
    assert done.outcome == "three-of-a-kind"
    assert done.payout == BET + BET * THREE_OF_A_KIND_PAYS
    assert started_event(store, done.code)[CHOSEN] == {DECK_LABEL: ["7h", "7d", "7s"]}


def test_a_chosen_card_round_is_never_certified_but_is_still_checked_against_its_cards(
    with_cards: WithCards, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    app = with_cards({DECK_LABEL: "5h 9c 7d"})  # spread 3; the 7 falls between: pays 2:1
    sid = open_session(app)
    app.red_dog_bet("bet", sid, BET)
    done = app.red_dog_see("see", sid)
    assert done.payout == BET + 2 * BET
    code = done.code

    report = check_round(store.db, code)
    assert report.status == "settled" and report.rederived and not report.ok
    assert [(f.step, f.field) for f in report.findings] == [("started", CHOSEN)]
    assert "not a certified round" in report.problems[0]
    assert audit_cli(["round", code, "--db", store.db, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False

    rtp = rtp_report(store.db)
    assert [p for p in rtp.problems if code in p] == [
        f"round {code}: cards chosen by a card source (tests only), not dealt from the seed: "
        "left out of the tally"
    ]
    assert all(g.group.tally.rounds == 0 for g in rtp.groups)

    # Re-derived from the recorded cards, not waved through: an altered payout is caught.
    rewrite_settled_payout(store, code, 10 * BET)
    altered = check_round(store.db, code)
    assert [(f.step, f.field) for f in altered.findings] == [
        ("started", CHOSEN),
        ("settled", "payout"),
    ]


def test_a_chosen_jb_4line_deal_and_line_deck_give_a_royal_on_that_line_only(
    with_cards: WithCards, store: Store
) -> None:
    # Four to a royal dealt; line 2 (index 1) draws the ten of hearts first. The other
    # lines' first cards are chosen too: left to their seeds, one draws Th 1 time in 47.
    app = with_cards(
        {
            DEAL_LABEL: "Ah Kh Qh Jh 2c",
            line_label(0): "2d",
            line_label(1): "Th",
            line_label(2): "3d",
            line_label(3): "4d",
        }
    )
    sid = open_session(app)
    dealt = app.vp_deal("deal", sid, "jb-4line", 10, 5, 4)
    assert dealt.view["dealt"] == ["Ah", "Kh", "Qh", "Jh", "2c"]

    done = app.vp_act("draw", sid, ["draw", [0, 1, 2, 3]])

    lines = done.view["lines"]
    assert lines[1]["cards"] == ["Ah", "Kh", "Qh", "Jh", "Th"]
    assert lines[1]["rank"] == HandRank.ROYAL_FLUSH.value
    royal_5_coins = VARIANTS["jb-4line"].paytable.pays[HandRank.ROYAL_FLUSH][4]
    assert royal_5_coins == 4000 and lines[1]["win"] == 4000 * 10  # seed 000: 5 coins
    others = [ln for i, ln in enumerate(lines) if i != 1]
    assert all(ln["rank"] != HandRank.ROYAL_FLUSH.value for ln in others)
    assert started_event(store, done.code)[CHOSEN] == {
        DEAL_LABEL: ["Ah", "Kh", "Qh", "Jh", "2c"],
        line_label(0): ["2d"],
        line_label(1): ["Th"],
        line_label(2): ["3d"],
        line_label(3): ["4d"],
    }


def test_cards_no_deck_could_deal_are_refused_and_change_nothing(
    with_cards: WithCards, store: Store
) -> None:
    app = with_cards(
        {DEAL_LABEL: "Ah Ah Qh Jh 2c"}, {DEAL_LABEL: "Ah Kh Qh Jh 2c", line_label(0): "Kh"}
    )
    sid = open_session(app)
    err = assert_refused(store, ChosenCardsError, app.vp_deal, "d1", sid, "jb-4line", 10, 1, 4)
    assert "chosen twice" in err.message
    app.vp_deal("d2", sid, "jb-4line", 10, 1, 4)  # the second choice deals
    # Line 1's deck cannot start with a card already dealt: refused at the draw.
    err = assert_refused(store, ChosenCardsError, app.vp_act, "draw", sid, ["draw", [0]])
    assert "Kh" in err.message


def test_rounds_dealt_from_their_seed_record_no_chosen_cards_and_check_as_certified(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(bytes([9]) * 32)
    sid = open_session(app)
    result = app.red_dog_bet("bet", sid, BET)
    if result.status == "open":
        result = app.red_dog_see("see", sid)
    assert started_event(store, result.code)[CHOSEN] is None
    report = check_round(store.db, result.code)
    assert report.ok, report.problems
