"""Jacks or Better round state (seed 000, 4 lines; seed 004, multi-hand): deal and draw.

A round is a pure function of (variant, bet, decisions, seed). Every card comes from a
labelled stream of the round's seed:

- the deal: the first five cards of ``RandomStream(seed, "vp/deal").shuffled(full_deck())``;
- line ``i`` (0-based): ``RandomStream(seed, f"vp/line/{i}").shuffled(rest)``, where
  ``rest`` is the 47 cards not dealt, in id order; the non-held positions, in ascending
  order, take that deck's cards from the top (seed 000: "Ogni linea utilizza il proprio
  mazzo di carte");
- double-up step ``n`` (see :mod:`games.video_poker.double_up`):
  ``RandomStream(seed, f"vp/double/{n}").shuffled(full_deck())``.

A test may pass chosen cards in place of the seed (:mod:`games.deal`): the same labels,
each named deck with its chosen cards first.

A state holds only the cards already shown. Steps that reveal cards take the seed again,
check it re-derives the cards on the table, and derive the new ones, so a state read
mid-round gives nothing away. The total stake, ``coin_value * coins * lines``, is debited
by the ledger at the deal; ``win`` is what the player collects when the round settles.

"Bet max" (seed 000: "Puntata Massima ... cinque fiche e si distribuiscono
automaticamente le carte") is ``deal(variant, coin_value, MAX_COINS, lines, seed)``;
"Bet one" is :func:`bet_one`.

>>> from games.video_poker.variants import JB_4LINE
>>> seed = bytes(32)
>>> state = deal(JB_4LINE, 100, 5, 4, seed)
>>> [str(c) for c in state.dealt], state.recommended, state.stake
(['Kd', 'Ac', 'Ad', '6h', 'Qc'], (1, 2), 2000)
>>> done = draw(state, state.recommended, seed)
>>> [line.rank.value for line in done.line_results]
['jacks-or-better', 'jacks-or-better', 'jacks-or-better', 'jacks-or-better']
>>> done.phase.value, done.win
('win-pending', 2000)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from typing import ClassVar, Final

from games.cards import Card, full_deck
from games.deal import SHUFFLE_MEMO, Deal, shuffled
from games.errors import ActionOutOfPhase, GameRuleError, InvalidDecision, SeedMismatch
from games.poker import HandRank, evaluate
from games.video_poker.strategy import optimal_hold, winning_cards_hold
from games.video_poker.variants import MAX_COINS, MIN_COINS, HoldPolicy, Variant

HAND_SIZE: Final = 5
DEAL_LABEL: Final = "vp/deal"


def line_label(line: int) -> str:
    """Stream label of line ``line``'s replacement deck (0-based)."""
    return f"vp/line/{line}"


def double_label(step: int) -> str:
    """Stream label of double-up step ``step``'s deck (0-based count within the round)."""
    return f"vp/double/{step}"


class Phase(StrEnum):
    """Where a round stands (wire format: never renamed)."""

    DEALT = "dealt"
    """Five cards shown; the player chooses holds and draws."""
    WIN_PENDING = "win-pending"
    """A win is on the table: collect, double or half double (seed 000)."""
    DOUBLE_PICK = "double-pick"
    """A double-up step is staked: the dealer's card is up, the player picks one of four."""
    SETTLED = "settled"
    """Over: ``win`` is credited (0 on a loss)."""


# --- errors -----------------------------------------------------------------------------


class InvalidCoins(GameRuleError):
    """Coins per line outside 1..5 (seed 000: one to five fiche per line)."""

    code: ClassVar[str] = "invalid-coins"

    def __init__(self, coins: object) -> None:
        self.coins = coins
        super().__init__(f"coins per line must be {MIN_COINS}..{MAX_COINS}, got {coins!r}")


class InvalidCoinValue(GameRuleError):
    """A coin value the variant does not offer."""

    code: ClassVar[str] = "invalid-coin-value"

    def __init__(self, coin_value: object, allowed: Sequence[int]) -> None:
        self.coin_value = coin_value
        self.allowed = tuple(allowed)
        super().__init__(f"coin value {coin_value!r} is not offered; choose one of {allowed}")


class InvalidLines(GameRuleError):
    """A number of lines (hands) the variant does not offer."""

    code: ClassVar[str] = "invalid-lines"

    def __init__(self, lines: object, allowed: Sequence[int], message: str | None = None) -> None:
        self.lines = lines
        self.allowed = tuple(allowed)
        super().__init__(message or f"{lines!r} lines are not offered; choose one of {allowed}")


class InvalidHolds(GameRuleError):
    """Holds that are not distinct card positions 0..4."""

    code: ClassVar[str] = "invalid-holds"


# --- values -----------------------------------------------------------------------------


class DecisionKind(StrEnum):
    """The player's decisions after the deal (wire format: never renamed)."""

    DRAW = "draw"
    COLLECT = "collect"
    DOUBLE = "double"
    HALF_DOUBLE = "half-double"
    PICK = "pick"


_KINDS: dict[str, DecisionKind] = {k.value: k for k in DecisionKind}
"""Each kind by its wire name (a look-up; iterating the enum costs microseconds a call)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One recorded decision: ``draw(holds)``, ``collect``, ``double``, ``half-double`` or
    ``pick(index)``. Holds are kept sorted: a hold is a set of positions.

    >>> Decision.from_wire(["draw", [3, 0]]) == Decision.draw((0, 3))
    True
    >>> Decision.pick(2).to_wire(), Decision.collect().to_wire()
    (['pick', 2], ['collect'])
    """

    kind: DecisionKind
    holds: tuple[int, ...] = ()
    index: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, DecisionKind):
            kind = _KINDS.get(self.kind) if isinstance(self.kind, str) else None
            if kind is None:
                raise InvalidDecision(f"unknown decision kind {self.kind!r}")
            object.__setattr__(self, "kind", kind)
        if self.kind is DecisionKind.DRAW:
            object.__setattr__(self, "holds", normalize_holds(self.holds))
        elif self.holds:
            raise InvalidDecision(f"{self.kind.value!r} takes no holds, got {self.holds!r}")
        if self.kind is DecisionKind.PICK:
            if isinstance(self.index, bool) or not isinstance(self.index, int):
                raise InvalidDecision(f"'pick' needs a card index, got {self.index!r}")
        elif self.index is not None:
            raise InvalidDecision(f"{self.kind.value!r} takes no index, got {self.index!r}")

    @classmethod
    def draw(cls, holds: Iterable[int]) -> Decision:
        return cls(DecisionKind.DRAW, holds=tuple(holds))

    @classmethod
    def collect(cls) -> Decision:
        return cls(DecisionKind.COLLECT)

    @classmethod
    def double(cls) -> Decision:
        return cls(DecisionKind.DOUBLE)

    @classmethod
    def half_double(cls) -> Decision:
        return cls(DecisionKind.HALF_DOUBLE)

    @classmethod
    def pick(cls, index: int) -> Decision:
        return cls(DecisionKind.PICK, index=index)

    def to_wire(self) -> list[object]:
        """JSON-friendly form for events (lists: the transcoder turns tuples into lists)."""
        if self.kind is DecisionKind.DRAW:
            return [self.kind.value, list(self.holds)]
        if self.kind is DecisionKind.PICK:
            return [self.kind.value, self.index]
        return [self.kind.value]

    @classmethod
    def from_wire(cls, value: Decision | Sequence[object]) -> Decision:
        """Accept a Decision or its wire form (``["draw", [0, 2]]``, ``["pick", 1]``, ...)."""
        if isinstance(value, Decision):
            return value
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
            raise InvalidDecision(f"not a decision: {value!r}")
        head, *args = value
        kind = _KINDS.get(head) if isinstance(head, str) else None
        if kind is None:
            raise InvalidDecision(f"unknown decision {head!r}")
        if kind is DecisionKind.DRAW:
            if len(args) != 1:
                raise InvalidDecision(f"'draw' takes one list of holds, got {args!r}")
            holds = args[0]
            if isinstance(holds, str | bytes) or not isinstance(holds, Iterable):
                raise InvalidDecision(f"'draw' takes one list of holds, got {args!r}")
            return cls(kind, holds=tuple(holds))
        if kind is DecisionKind.PICK:
            if len(args) != 1:
                raise InvalidDecision(f"'pick' takes one card index, got {args!r}")
            index = args[0]
            if isinstance(index, bool) or not isinstance(index, int):
                raise InvalidDecision(f"'pick' takes one card index, got {args!r}")
            return cls(kind, index=index)
        if args:
            raise InvalidDecision(f"{kind.value!r} takes no arguments, got {args!r}")
        return cls(kind)


@dataclass(frozen=True, slots=True)
class LineResult:
    """One line after the draw, settled as its own hand (seed 000: "Ogni linea è
    considerata come una mano distinta")."""

    cards: tuple[Card, ...]
    """The final five cards, by position; held positions keep the dealt card."""
    rank: HandRank
    multiplier: int
    """The paytable amount for this hand and the coins bet (a multiple of the coin value)."""
    win: int
    """``multiplier * coin_value``, minor units."""


class DoubleKind(StrEnum):
    """A double-up step's bet type (wire format; seed 000: "Raddoppio" / "Mezzo Raddoppio")."""

    DOUBLE = "double"
    HALF_DOUBLE = "half-double"


class StepResult(StrEnum):
    """How a double-up pick ended (wire format)."""

    WIN = "win"
    PUSH = "push"
    LOSE = "lose"


@dataclass(frozen=True, slots=True)
class DoubleUpStep:
    """One double-up step, its own bet type in history (seed 000: "Il raddoppio è un tipo
    di puntata a sé stante"). ``cards``, ``index``, ``result`` and ``amount_after`` are
    unset while the pick is pending: the four face-down cards are not in the state until
    they are turned over."""

    n: int
    """0-based count of double-up steps in the round; selects the stream ``vp/double/n``."""
    kind: DoubleKind
    win_before: int
    staked: int
    """The amount at risk: the whole win, or its half (rounded down) for a half double."""
    banked: int
    """``win_before - staked``: kept whatever the pick (0 for a full double)."""
    dealer_card: Card
    cards: tuple[Card, ...] = ()
    index: int | None = None
    result: StepResult | None = None
    amount_after: int | None = None

    @property
    def picked(self) -> Card | None:
        return None if self.index is None else self.cards[self.index]


@dataclass(frozen=True, slots=True)
class VideoPokerState:
    """One round. Amounts are int minor units; cards are only those already shown.

    ``win`` is the player's current win: the sum of the line wins after the draw, then
    moved by each double-up step; once settled it is the amount credited (0 on a loss).
    ``decisions`` lists what was decided so far, so ``replay`` of them rebuilds this state.
    """

    variant: Variant
    coin_value: int
    coins: int
    lines: int
    dealt: tuple[Card, ...]
    recommended: tuple[int, ...]
    """The holds the game proposes after the deal, per ``variant.hold_policy``."""
    phase: Phase = Phase.DEALT
    holds: tuple[int, ...] | None = None
    line_results: tuple[LineResult, ...] = ()
    win: int = 0
    steps: tuple[DoubleUpStep, ...] = ()
    decisions: tuple[Decision, ...] = ()

    @property
    def stake(self) -> int:
        """The total stake debited at the deal: coin value x coins x lines."""
        return stake(self.coin_value, self.coins, self.lines)

    @property
    def line_win(self) -> int:
        """What the draw paid: the sum over lines (seed 000: "somma delle vincite per
        ciascuna linea"); 0 before the draw."""
        return sum(line.win for line in self.line_results)

    @property
    def pending_step(self) -> DoubleUpStep | None:
        """The double-up step awaiting its pick, if any."""
        return self.steps[-1] if self.phase is Phase.DOUBLE_PICK else None

    @property
    def settled(self) -> bool:
        return self.phase is Phase.SETTLED


def stake(coin_value: int, coins: int, lines: int) -> int:
    """Total stake of a round (seed 000: the per-line bet "X 4"; seed 004: columns x value).

    >>> stake(50, 5, 4)
    1000
    """
    return coin_value * coins * lines


def bet_one(coins: int) -> int:
    """The coin count after pressing "Bet one": one more, back to 1 after 5 (seed 000:
    "Ogni clic sul bottone Una Puntata aumenta la puntata").

    >>> [bet_one(c) for c in range(1, 6)]
    [2, 3, 4, 5, 1]
    """
    _check_coins(coins)
    return coins % MAX_COINS + 1


def normalize_holds(holds: object) -> tuple[int, ...]:
    """Holds as sorted positions, or :class:`InvalidHolds` saying why not.

    >>> normalize_holds([4, 0])
    (0, 4)
    """
    if isinstance(holds, str | bytes) or not isinstance(holds, Iterable):
        raise InvalidHolds(f"holds must be card positions, got {holds!r}")
    try:
        positions = list(holds)
    except TypeError as exc:
        raise InvalidHolds(f"holds must be card positions, got {holds!r}") from exc
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < HAND_SIZE:
            raise InvalidHolds(f"hold positions are 0..{HAND_SIZE - 1}, got {p!r}")
    ints = [p for p in positions if isinstance(p, int)]
    if len(set(ints)) != len(ints):
        raise InvalidHolds(f"a position is held at most once, got {positions}")
    return tuple(sorted(ints))


def deal_cards(seed: Deal) -> tuple[Card, ...]:
    """The five dealt cards: the top of the ``vp/deal`` deck."""
    if isinstance(seed, bytes):
        return _deal_cards(seed)
    return tuple(shuffled(seed, DEAL_LABEL, full_deck())[:HAND_SIZE])


def line_deck(seed: Deal, line: int, dealt: Sequence[Card]) -> list[Card]:
    """Line ``line``'s replacement deck: the cards not dealt, in id order, shuffled by the
    line's own stream (seed 000, seed 004: each hand draws from its own deck)."""
    if isinstance(seed, bytes):
        return list(_line_deck(seed, line, tuple(dealt)))
    return shuffled(seed, line_label(line), _undealt(dealt))


def double_deck(seed: Deal, step: int) -> list[Card]:
    """Double-up step ``step``'s fresh deck: dealer card ``[0]``, face-down ``[1:5]``."""
    if isinstance(seed, bytes):
        return list(_double_deck(seed, step))
    return shuffled(seed, double_label(step), full_deck())


# The same decks remembered by a key that is cheap to hash (a card hashes in Python, so
# a 47-card key costs a good part of what it saves): the round is re-derived from its
# seed on every command, so a 4-line draw and its collect ask for the same decks again.


@lru_cache(maxsize=SHUFFLE_MEMO)
def _deal_cards(seed: bytes) -> tuple[Card, ...]:
    return tuple(shuffled(seed, DEAL_LABEL, full_deck())[:HAND_SIZE])


@lru_cache(maxsize=SHUFFLE_MEMO)
def _line_deck(seed: bytes, line: int, dealt: tuple[Card, ...]) -> tuple[Card, ...]:
    return tuple(shuffled(seed, line_label(line), _undealt(dealt)))


def _undealt(dealt: Sequence[Card]) -> list[Card]:
    """The cards not dealt, in id order. A card's id is its place in ``full_deck()``, so
    this compares ints (C) instead of hashing 52 cards (each hash is Python code)."""
    gone = {c.id for c in dealt}
    return [c for i, c in enumerate(full_deck()) if i not in gone]


@lru_cache(maxsize=SHUFFLE_MEMO)
def _double_deck(seed: bytes, step: int) -> tuple[Card, ...]:
    return tuple(shuffled(seed, double_label(step), full_deck()))


PROPOSE = True
"""Whether ``deal`` works out the proposed holds. Re-execution of a recorded round
(``audit_cli.reexec``) turns it off: every recorded draw names its holds (a draw sent
without any is recorded with the proposal it took), so the proposal moves no money there,
and it is the costliest part of a deal (an exact max-EV search, and its tables)."""


def recommend(variant: Variant, dealt: Sequence[Card], coins: int) -> tuple[int, ...]:
    """The holds proposed after the deal, per the variant's policy (``()`` when
    :data:`PROPOSE` is off)."""
    if not PROPOSE:
        return ()
    hand = tuple(dealt)
    if variant.hold_policy is HoldPolicy.WINNING_CARDS:
        return tuple(sorted(winning_cards_hold(hand)))
    return tuple(sorted(optimal_hold(hand, variant.paytable, coins).hold))


# --- deal -------------------------------------------------------------------------------


def verify_deal(variant: Variant, coin_value: object, coins: object, lines: object) -> None:
    """Raise a typed error saying why this bet cannot be dealt under ``variant``."""
    _check_coins(coins)
    if not _is_int(coin_value) or coin_value not in variant.coin_values:
        raise InvalidCoinValue(coin_value, variant.coin_values)
    if not _is_int(lines) or lines not in variant.lines:
        raise InvalidLines(lines, variant.lines)


def can_deal(variant: Variant, coin_value: object, coins: object, lines: object) -> bool:
    try:
        verify_deal(variant, coin_value, coins, lines)
    except GameRuleError:
        return False
    return True


def deal(variant: Variant, coin_value: int, coins: int, lines: int, seed: Deal) -> VideoPokerState:
    """Stake ``coin_value * coins * lines`` and show five cards with the proposed holds."""
    verify_deal(variant, coin_value, coins, lines)
    dealt = deal_cards(seed)
    return VideoPokerState(
        variant=variant,
        coin_value=coin_value,
        coins=coins,
        lines=lines,
        dealt=dealt,
        recommended=recommend(variant, dealt, coins),
    )


# --- draw -------------------------------------------------------------------------------


def verify_draw(state: VideoPokerState, holds: object, seed: Deal | None = None) -> None:
    """Raise a typed error saying why the player cannot draw with ``holds`` now. With
    ``seed``, also check that it re-derives the dealt cards."""
    require_phase(state, "draw", Phase.DEALT)
    normalize_holds(holds)
    if seed is not None:
        check_seed(state, seed)


def can_draw(state: VideoPokerState, holds: object, seed: Deal | None = None) -> bool:
    try:
        verify_draw(state, holds, seed)
    except GameRuleError:
        return False
    return True


def draw(state: VideoPokerState, holds: Iterable[int], seed: Deal) -> VideoPokerState:
    """Keep ``holds`` (positions 0..4) on every line, replace the rest from each line's own
    deck, and pay each line on the paytable column for the coins bet."""
    verify_draw(state, holds, seed)
    held = normalize_holds(holds)
    discarded = [p for p in range(HAND_SIZE) if p not in held]
    paytable = state.variant.paytable
    results = []
    for i in range(state.lines):
        cards = list(state.dealt)
        if discarded:
            deck = line_deck(seed, i, state.dealt)
            for p, card in zip(discarded, deck, strict=False):
                cards[p] = card
        rank = evaluate(cards)
        multiplier = paytable.payout(rank, state.coins)
        results.append(LineResult(tuple(cards), rank, multiplier, multiplier * state.coin_value))
    win = sum(r.win for r in results)
    return replace(
        state,
        # seed 000: a win opens the choice "Incassa / Raddoppio / Mezzo Raddoppio"; with no
        # double-up (seed 004) there is nothing to choose and the draw settles the win.
        phase=Phase.WIN_PENDING if win > 0 and state.variant.win_waits else Phase.SETTLED,
        holds=held,
        line_results=tuple(results),
        win=win,
        decisions=(*state.decisions, Decision.draw(held)),
    )


# --- shared checks ----------------------------------------------------------------------


def require_phase(state: VideoPokerState, action: str, *allowed: Phase) -> None:
    if state.phase not in allowed:
        raise ActionOutOfPhase(action, state.phase.value, ", ".join(p.value for p in allowed))


def check_seed(state: VideoPokerState, seed: Deal) -> None:
    """Raise :class:`SeedMismatch` unless ``seed`` re-derives the cards on the table."""
    if deal_cards(seed) != state.dealt:
        raise SeedMismatch("the seed does not re-derive the dealt cards of this round")
    pending = state.pending_step
    if pending is not None and double_deck(seed, pending.n)[0] != pending.dealer_card:
        raise SeedMismatch("the seed does not re-derive the dealer's double-up card")


def _is_int(value: object) -> bool:
    # Money and counts are exact ints: 10.0 == 10 would pass an ``in`` test, so be strict.
    return isinstance(value, int) and not isinstance(value, bool)


def _check_coins(coins: object) -> None:
    if not isinstance(coins, int) or isinstance(coins, bool) or not MIN_COINS <= coins <= MAX_COINS:
        raise InvalidCoins(coins)
