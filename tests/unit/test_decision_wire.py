"""A decision's wire name read into its kind, in each game (a dictionary look-up since
2026-12-05): every wire name is read, anything else is refused as an unknown decision."""

from __future__ import annotations

from typing import Any

import pytest

from games.blackjack import decisions as blackjack
from games.errors import InvalidDecision
from games.red_dog import engine as red_dog
from games.video_poker import engine as video_poker

NOT_A_NAME: list[Any] = ["HIT", "Hit", " hit", "", "raise ", "DRAW", 1, None, ["hit"], ("see",)]


@pytest.mark.parametrize("kind", list(blackjack.DecisionKind))
def test_blackjack_reads_every_wire_name(kind: blackjack.DecisionKind) -> None:
    for wire in (kind.value, [kind.value], (kind.value,), kind):
        assert blackjack.Decision.from_wire(wire).kind is kind
    assert blackjack.Decision(kind.value).kind is kind  # type: ignore[arg-type]


@pytest.mark.parametrize("head", NOT_A_NAME)
def test_blackjack_refuses_anything_else(head: Any) -> None:
    with pytest.raises(InvalidDecision):
        blackjack.Decision.from_wire([head])
    with pytest.raises(InvalidDecision):
        blackjack.Decision(head)


def test_red_dog_reads_its_names_and_refuses_others() -> None:
    assert red_dog.Decision.from_wire(["see"]).kind is red_dog.DecisionKind.SEE
    assert red_dog.Decision.from_wire(("see",)).kind is red_dog.DecisionKind.SEE
    for head in [*NOT_A_NAME, "hit", "SEE"]:
        with pytest.raises(InvalidDecision):
            red_dog.Decision.from_wire([head])


def test_video_poker_reads_its_names_and_refuses_others() -> None:
    collect = video_poker.Decision.from_wire(["collect"])
    assert collect.kind is video_poker.DecisionKind.COLLECT
    assert video_poker.Decision("collect").kind is video_poker.DecisionKind.COLLECT  # type: ignore[arg-type]
    for head in [*NOT_A_NAME, "see", "COLLECT"]:
        with pytest.raises(InvalidDecision):
            video_poker.Decision.from_wire([head])
        with pytest.raises(InvalidDecision):
            video_poker.Decision(head)
