"""Red Dog rules (seed 003): the one place where a round's transitions live.

A round is a pure function of (rules, bet, decisions, seed). Its cards all come from ONE
52-card deck shuffled by ``RandomStream(seed, "red-dog/deck").shuffled(full_deck())``:
first card ``deck[0]``, second ``deck[1]``, third ``deck[2]``. A state only ever holds the
cards already shown; the steps that reveal the third card take the seed again and
re-derive the deck, so a state read mid-round gives nothing away.
A test may pass chosen cards in place of the seed (:mod:`games.deal`): the same deck
label, its chosen cards first.

>>> seed = bytes([4]) * 32
>>> state = deal(DEFAULT_RULES, 500, seed)
>>> [str(c) for c in state.cards], state.phase.value, state.spread
(['3d', 'Kd'], 'decide', 9)
>>> done = raise_bet(state, 500, seed)
>>> [str(c) for c in done.cards], done.outcome.value, done.staked, done.payout
(['3d', 'Kd', 'Js'], 'win', 1000, 2000)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from games.cards import Card, Rank, full_deck
from games.deal import Deal, shuffled
from games.errors import (
    ActionOutOfPhase,
    BetAboveMaximum,
    BetBelowMinimum,
    GameRuleError,
    InvalidDecision,
    InvalidRules,
    RaiseAboveMaximum,
    RaiseTooLarge,
    SeedMismatch,
    require_positive_amount,
)

RULES_VERSION = "red-dog/1"
DECK_LABEL = "red-dog/deck"

# seed 003, "Tabella dei pagamenti": spread 1 pays 5:1, 2 pays 4:1, 3 pays 2:1,
# 4..11 pays 1:1 (even money). Read-only so the paytable cannot drift at run time.
PAYS: Mapping[int, int] = MappingProxyType(
    {1: 5, 2: 4, 3: 2, **{spread: 1 for spread in range(4, 12)}}
)
# seed 003: a pair followed by a third card of the same rank ("Tris") pays 11:1.
THREE_OF_A_KIND_PAYS = 11
PAYTABLE_ID = "red-dog/5-4-2-1+11"


class Phase(StrEnum):
    """Where a round stands (wire format)."""

    AWAITING_DECISION = "decide"
    SETTLED = "settled"


class Outcome(StrEnum):
    """How a settled round ended (wire format)."""

    PUSH_CONSECUTIVE = "push-consecutive"
    PUSH_PAIR = "push-pair"
    THREE_OF_A_KIND = "three-of-a-kind"
    WIN = "win"
    LOSE = "lose"


class DecisionKind(StrEnum):
    """The player's choice once the spread is shown (wire format)."""

    RAISE = "raise"
    SEE = "see"


_KINDS: dict[str, DecisionKind] = {k.value: k for k in DecisionKind}
"""Each kind by its wire name (a look-up; iterating the enum costs microseconds a call)."""


@dataclass(frozen=True, slots=True)
class RedDogRules:
    """Table limits (int minor units) and the rules version the engine implements."""

    min_bet: int
    max_bet: int
    rules_version: str = RULES_VERSION

    def __post_init__(self) -> None:
        try:
            require_positive_amount("min_bet", self.min_bet)
            require_positive_amount("max_bet", self.max_bet)
        except GameRuleError as exc:
            raise InvalidRules(str(exc)) from exc
        if self.min_bet > self.max_bet:
            raise InvalidRules(f"min_bet {self.min_bet} is above max_bet {self.max_bet}")
        if self.rules_version != RULES_VERSION:
            raise InvalidRules(
                f"rules version {self.rules_version!r} is not implemented"
                f" (this engine plays {RULES_VERSION!r})"
            )

    @property
    def paytable_id(self) -> str:
        return PAYTABLE_ID


# 1.00 to 500.00 in cents. The limits are per table; these are only the defaults.
DEFAULT_RULES = RedDogRules(min_bet=100, max_bet=50_000)


@dataclass(frozen=True, slots=True)
class Decision:
    """One recorded player decision: ``see``, or ``raise`` by ``amount``.

    >>> Decision.from_wire(["raise", 5]) == Decision(DecisionKind.RAISE, 5)
    True
    >>> Decision.see().to_wire()
    ['see']
    """

    kind: DecisionKind
    amount: int = 0

    @classmethod
    def see(cls) -> Decision:
        return cls(DecisionKind.SEE)

    @classmethod
    def raise_by(cls, amount: int) -> Decision:
        return cls(DecisionKind.RAISE, amount)

    def to_wire(self) -> list[str | int]:
        """JSON-friendly form for events (lists, since the transcoder turns tuples into
        lists anyway)."""
        if self.kind is DecisionKind.RAISE:
            return [self.kind.value, self.amount]
        return [self.kind.value]

    @classmethod
    def from_wire(cls, value: Decision | Sequence[object]) -> Decision:
        """Accept a Decision, ``("see",)`` or ``("raise", amount)`` (tuple or list)."""
        if isinstance(value, Decision):
            return value
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
            raise InvalidDecision(f"not a decision: {value!r}")
        head, *args = value
        kind = _KINDS.get(head) if isinstance(head, str) else None
        if kind is None:
            raise InvalidDecision(f"unknown decision {head!r} (expected 'raise' or 'see')")
        if kind is DecisionKind.SEE:
            if args:
                raise InvalidDecision(f"'see' takes no arguments, got {args!r}")
            return cls.see()
        if len(args) != 1:
            raise InvalidDecision(f"'raise' takes exactly one amount, got {args!r}")
        amount = require_positive_amount("raise", args[0])
        return cls.raise_by(amount)


@dataclass(frozen=True, slots=True)
class RedDogState:
    """One round of Red Dog. ``cards`` holds only the cards already shown.

    ``spread`` is the number of ranks strictly between the first two cards (0 when they are
    consecutive, ``None`` for a pair). ``staked`` is bet + raise; ``payout`` is what goes
    back to the player at settlement: stake plus winnings on a win, the stake on a push,
    0 on a loss (and 0 while the round is open).
    """

    rules: RedDogRules
    bet: int
    cards: tuple[Card, ...]
    phase: Phase
    spread: int | None
    raise_amount: int = 0
    outcome: Outcome | None = None
    payout: int = 0
    staked: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "staked", self.bet + self.raise_amount)

    @property
    def settled(self) -> bool:
        return self.phase is Phase.SETTLED

    @property
    def net(self) -> int:
        """Player's win (positive) or loss (negative) for the round; 0 while open."""
        return self.payout - self.staked if self.settled else 0

    @property
    def max_raise(self) -> int:
        """The largest raise allowed now (0 when no raise is possible)."""
        if self.phase is not Phase.AWAITING_DECISION:
            return 0
        # seed 003: raise "entro i limiti del tavolo" (DESIGN §5.2: up to the original bet)
        return max(0, min(self.bet, self.rules.max_bet - self.bet))


def shuffled_deck(seed: Deal) -> list[Card]:
    """The round's deck; the production shuffle that every Red Dog card comes from."""
    return shuffled(seed, DECK_LABEL, full_deck())


def spread_of(first: Rank, second: Rank) -> int | None:
    """Ranks strictly between two ranks (seed 003: 2 and 4 -> 1, 6 and Q -> 5); 0 for
    consecutive ranks, ``None`` for a pair.

    >>> spread_of(Rank.TWO, Rank.FOUR), spread_of(Rank.QUEEN, Rank.SIX)
    (1, 5)
    >>> spread_of(Rank.SEVEN, Rank.EIGHT), spread_of(Rank.ACE, Rank.ACE)
    (0, None)
    """
    if first == second:
        return None
    return abs(int(first) - int(second)) - 1


def outcome_for(first: Rank, second: Rank, third: Rank) -> Outcome:
    """The outcome of a round whose cards are (or would be) these three ranks."""
    spread = spread_of(first, second)
    if spread == 0:
        # seed 003: consecutive cards are a push; the round ends without a third card.
        return Outcome.PUSH_CONSECUTIVE
    if spread is None:
        # seed 003: a pair draws a third card; the same rank again wins 11:1, else push.
        return Outcome.THREE_OF_A_KIND if third == first else Outcome.PUSH_PAIR
    low, high = sorted((int(first), int(second)))
    # seed 003: the third card must fall strictly between the first two.
    return Outcome.WIN if low < int(third) < high else Outcome.LOSE


def payout_for(outcome: Outcome, spread: int | None, staked: int) -> int:
    """Total returned to the player for ``staked`` (bet + raise): 0 on a loss."""
    if outcome is Outcome.WIN:
        if spread is None or spread not in PAYS:
            raise ValueError(f"a win needs a spread of 1..11, got {spread!r}")
        return staked + staked * PAYS[spread]  # seed 003: spread 1 pays 5:1, ..., 4+ 1:1
    if outcome is Outcome.THREE_OF_A_KIND:
        return staked + staked * THREE_OF_A_KIND_PAYS  # seed 003: "Tris" 11 a 1
    if outcome is Outcome.LOSE:
        return 0  # seed 003: "le puntate andranno perse" (bet and raise)
    return staked  # seed 003: push, "la puntata viene restituita"


# --- deal -------------------------------------------------------------------------------


def verify_deal(rules: RedDogRules, bet: object) -> None:
    """Raise a typed error saying why ``bet`` cannot be dealt at this table."""
    amount = require_positive_amount("bet", bet)
    if amount < rules.min_bet:
        # seed 003: a bet under the minimum shows an error naming the table limits.
        raise BetBelowMinimum(amount, rules.min_bet)
    if amount > rules.max_bet:
        raise BetAboveMaximum(amount, rules.max_bet)


def can_deal(rules: RedDogRules, bet: object) -> bool:
    try:
        verify_deal(rules, bet)
    except GameRuleError:
        return False
    return True


def deal(rules: RedDogRules, bet: int, seed: Deal) -> RedDogState:
    """Place ``bet`` and show two cards; consecutive cards and pairs settle at once."""
    verify_deal(rules, bet)
    deck = shuffled_deck(seed)
    first, second = deck[0], deck[1]
    spread = spread_of(first.rank, second.rank)
    if spread == 0:
        outcome = Outcome.PUSH_CONSECUTIVE
        return RedDogState(
            rules=rules,
            bet=bet,
            cards=(first, second),
            phase=Phase.SETTLED,
            spread=0,
            outcome=outcome,
            payout=payout_for(outcome, 0, bet),
        )
    if spread is None:
        # seed 003: with a pair the third card is drawn at once; no raise is offered.
        return _settle(
            RedDogState(rules, bet, (first, second), Phase.AWAITING_DECISION, None), deck[2]
        )
    return RedDogState(rules, bet, (first, second), Phase.AWAITING_DECISION, spread)


# --- raise ------------------------------------------------------------------------------


def verify_raise(state: RedDogState, amount: object, seed: Deal | None = None) -> None:
    """Raise a typed error saying why ``amount`` cannot be raised now. With ``seed``, also
    check that it re-derives the cards on the table."""
    _require_deciding(state, "raise")
    raised = require_positive_amount("raise", amount)
    # DESIGN §5.2 reading of seed 003: the raise is at most the original bet and stays
    # "entro i limiti del tavolo". The refusal quotes the limit that binds (max_raise): the
    # table's when bet plus raise would pass it, else the original bet.
    if state.bet + raised > state.rules.max_bet:
        raise RaiseAboveMaximum(raised, state.bet, state.rules.max_bet)
    if raised > state.bet:
        raise RaiseTooLarge(raised, state.bet)
    if seed is not None:
        _check_seed(state, seed)


def can_raise(state: RedDogState, amount: object, seed: Deal | None = None) -> bool:
    try:
        verify_raise(state, amount, seed)
    except GameRuleError:
        return False
    return True


def raise_bet(state: RedDogState, amount: int, seed: Deal) -> RedDogState:
    """Add ``amount`` to the stake and draw the third card, which settles the round."""
    verify_raise(state, amount, seed)
    deck = shuffled_deck(seed)
    return _settle(_with_raise(state, amount), deck[2])


# --- see --------------------------------------------------------------------------------


def verify_see(state: RedDogState, seed: Deal | None = None) -> None:
    """Raise a typed error saying why the player cannot see now."""
    _require_deciding(state, "see")
    if seed is not None:
        _check_seed(state, seed)


def can_see(state: RedDogState, seed: Deal | None = None) -> bool:
    try:
        verify_see(state, seed)
    except GameRuleError:
        return False
    return True


def see(state: RedDogState, seed: Deal) -> RedDogState:
    """Draw the third card without raising ("Vedi"); it settles the round."""
    verify_see(state, seed)
    return _settle(state, shuffled_deck(seed)[2])


# --- decisions, default action and replay ----------------------------------------------


def default_action(state: RedDogState) -> Decision:
    """The decision taken for a player who leaves the round open: see, without raising.

    Seed 003 names no timeout rule. Our reading: the round ends on "Vedi" and the raise is
    an option of the player's ("ha l'opzione di aumentare"), so the automatic decision
    completes the round without taking any further stake.
    """
    _require_deciding(state, "take the default action")
    return Decision.see()


def apply(state: RedDogState, decision: Decision | Sequence[object], seed: Deal) -> RedDogState:
    """Apply one decision (a :class:`Decision` or its wire form)."""
    d = Decision.from_wire(decision)
    if d.kind is DecisionKind.RAISE:
        return raise_bet(state, d.amount, seed)
    return see(state, seed)


def replay(
    rules: RedDogRules,
    bet: int,
    decisions: Iterable[Decision | Sequence[object]],
    seed: Deal,
) -> RedDogState:
    """Re-run a recorded round: deal, then each decision in order. Returns the state the
    decisions lead to (still open if they stop early); a decision after settlement raises
    :class:`~games.errors.ActionOutOfPhase`."""
    state = deal(rules, bet, seed)
    for decision in decisions:
        state = apply(state, decision, seed)
    return state


# --- internals --------------------------------------------------------------------------


def _require_deciding(state: RedDogState, action: str) -> None:
    if state.phase is not Phase.AWAITING_DECISION:
        raise ActionOutOfPhase(action, state.phase.value, allowed=Phase.AWAITING_DECISION.value)


def _check_seed(state: RedDogState, seed: Deal) -> None:
    shown = shuffled_deck(seed)[: len(state.cards)]
    if tuple(shown) != state.cards:
        raise SeedMismatch("the seed does not re-derive the cards shown in this round")


def _with_raise(state: RedDogState, amount: int) -> RedDogState:
    return RedDogState(
        rules=state.rules,
        bet=state.bet,
        cards=state.cards,
        phase=state.phase,
        spread=state.spread,
        raise_amount=amount,
    )


def _settle(state: RedDogState, third: Card) -> RedDogState:
    first, second = state.cards
    outcome = outcome_for(first.rank, second.rank, third.rank)
    return RedDogState(
        rules=state.rules,
        bet=state.bet,
        cards=(first, second, third),
        phase=Phase.SETTLED,
        spread=state.spread,
        raise_amount=state.raise_amount,
        outcome=outcome,
        payout=payout_for(outcome, state.spread, state.staked),
    )
