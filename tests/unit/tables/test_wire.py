"""What the live tables record is wire format: the runner's steps are recorded as the one
``blackjack_advance`` command older runners sent (so their requests are still recognised),
a table's configuration keeps its JSON form, and phases keep their strings."""

from __future__ import annotations

from typing import Any

import pytest

from games.blackjack import Phase
from ledger.requests import body_digest
from ledger.tables import commands as tc
from ledger.tables.config import DEFAULT_CONFIG, TableConfig, check_config, rules_of
from ledger.tables.errors import InvalidTableConfig

AT = "2026-12-01T12:00:10.000+00:00"


@pytest.mark.parametrize(
    ("cmd", "action", "step", "early"),
    [
        (tc.OpenRound("T1", 3, AT), "open", 0, False),
        (tc.StartBetting("T1", 3, AT), "start", 0, False),
        (tc.DealRound("T1", 3, AT), "deal", 0, False),
        (tc.CloseInsurance("T1", 3, AT, True), "insurance", 0, True),
        (tc.CloseStep("T1", 3, AT, 2), "step", 2, False),
        (tc.CloseStep("T1", 3, AT, 4, early=True), "step", 4, True),
        (tc.PlayDealer("T1", 3, AT), "dealer", 0, False),
        (tc.SettleBatch("T1", 3, AT, 5), "settle-batch", 5, False),
        (tc.FinishRound("T1", 3, AT), "settle", 0, False),
    ],
)
def test_a_runner_step_is_recorded_as_the_advance_request_older_runners_sent(
    cmd: tc.RunnerCommand[Any], action: str, step: int, early: bool
) -> None:
    old = {"table": "T1", "number": 3, "action": action, "step": step, "at": AT, "early": early}
    assert cmd.name == "blackjack_advance" and cmd.scope == "blackjack-runner:T1"
    assert cmd.body() == old
    assert body_digest(cmd.name, cmd.body()) == body_digest("blackjack_advance", old)


def test_results_read_back_from_the_dicts_older_handlers_recorded() -> None:
    bet = {"seat_id": "s", "code": "IBJ-1", "bets": {"main": 100}, "status": "open"}
    old_bet = {**bet, "decisions": {}, "balance": 900}
    assert tc.SeatChanged.from_wire(old_bet) == tc.SeatChanged(
        seated=True, seat_id="s", code="IBJ-1", bets={"main": 100}, status="open", balance=900
    )
    away = tc.SeatChanged.from_wire({"seated": False, "balance": 20_000})
    assert away == tc.SeatChanged(seated=False, balance=20_000) and away.code is None
    decided = tc.SeatDecided.from_wire({**old_bet, "applied": "hit", "automatic": False})
    assert decided.applied == "hit" and decided.automatic is False
    dealt = tc.RoundDealt.from_wire({"round": 2, "phase": "betting", "seats": 0, "waiting": True})
    assert dealt.phase is Phase.BETTING and dealt.waiting
    assert tc.RoundDealt.from_wire({"round": 2, "phase": "step", "seats": 3}).waiting is False
    finished = tc.RoundFinished(round=2, phase=Phase.SETTLED, next_start=None)
    assert finished.wire() == {"round": 2, "phase": "settled", "next_start": None}
    with pytest.raises(ValueError, match="lacks"):
        tc.SeatDecided.from_wire(old_bet)  # a decision's answer names what applied


def test_the_table_phases_keep_their_wire_strings() -> None:
    table = ["betting", "insurance", "step", "dealer", "settling", "settled", "voided"]
    assert {p.value for p in Phase} == set(table)
    assert [Phase(p) for p in table][4] is Phase.SETTLING


def test_a_configuration_keeps_its_recorded_form_and_reads_by_attribute() -> None:
    assert check_config({}) == DEFAULT_CONFIG
    assert list(check_config({"chip": 200})) == list(DEFAULT_CONFIG)  # the keys' order too
    config = TableConfig.check({"limits": {"main": [200, 1_000]}, "betting_ms": 5_000})
    assert config.limits["main"] == (200, 1_000) and config.limits["hot-3"] == (100, 50_000)
    assert config.betting_ms == 5_000 and config.settle_batch == 1_000
    assert TableConfig.of(config.wire()) == config
    assert config.rules() == rules_of(config.wire())
    assert config.rules().min_bet == 200 and config.rules().decks == 8
    recorded = {k: v for k, v in config.wire().items() if k != "settle_batch"}
    assert TableConfig.of(recorded).settle_batch == 200  # a key added later: its default


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"colour": "green"},
        {"limits": {"main": [500, 100]}},
        {"limits": {"main": [0, 100]}},
        {"chip": 0},
        {"grace_ms": -1},
        {"decks": 0},
        {"decks": 1},  # 8 cards after a cut at 85 %: a round could run out of cards
        {"decks": 1, "penetration_permille": [400, 558]},  # 23 after the latest cut
        {"ten_up": "sometimes"},
    ],
)
def test_a_bad_configuration_is_refused_with_its_typed_error(bad: Any) -> None:
    with pytest.raises(InvalidTableConfig):
        TableConfig.check(bad)


def test_a_shoe_that_holds_a_whole_round_after_its_latest_cut_is_accepted() -> None:
    # 52 cards, the latest cut at 52 * 557 // 1000 = 28: 24 cards follow, ROUND_CARDS_MAX
    assert TableConfig.check({"decks": 1, "penetration_permille": [400, 557]}).decks == 1
