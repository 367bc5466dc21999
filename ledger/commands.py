"""Commands: one frozen dataclass per request, exactly as the caller sent it.

A command is what the idempotency record covers: ``name`` and ``body()`` are hashed before
anything is loaded, so a retry is recognised whatever the round or session has become
since. Defaults that depend on state (the holds of a bare draw, the bet a repeat repeats)
are *not* fields: the handler fills them in inside the unit of work. ``name`` and the body
shapes are wire format (stored in request records): never renamed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, Self, cast, get_args
from uuid import UUID

from typing_extensions import TypeVar

from games.errors import InvalidDecision
from ledger.errors import InvalidRequest
from ledger.money import check_amount, check_currency
from ledger.results import (
    AccountMoved,
    AccountOpened,
    Result,
    RoundPlayed,
    RoundVoided,
    SessionClosed,
    SessionOpened,
    Wire,
)
from ledger.unit_of_work import UnitOfWork

OPERATOR = "operator"
R = TypeVar("R", default=Wire)
"""A command's result type. A command declared without one answers its wire form (the
live tables' commands, until they have result types of their own)."""
C = TypeVar("C")
Handler = Callable[[UnitOfWork, C], R]
"""Runs the command ``C`` in a unit of work and answers its result ``R``
(:mod:`ledger.handlers`)."""


@dataclass(frozen=True)
class Route(Generic[C, R]):
    """A command type and its handler (``Command.handled_by``), for the registry."""

    command: type[C]
    handler: Handler[C, R]


def _canonical_id(command: object, name: str) -> None:
    """Session ids arrive as UUIDs or text; the record and the scope use the text."""
    value = getattr(command, name)
    if isinstance(value, UUID):
        object.__setattr__(command, name, str(value))


def _as_tuple(command: object, name: str) -> None:
    """A list argument is kept as a tuple (commands are frozen); anything else as it came,
    for the game to refuse with its own typed error."""
    value = getattr(command, name)
    if isinstance(value, list):
        object.__setattr__(command, name, tuple(value))


def _listed(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Command(Generic[R]):
    """Base of every command: ``Command[R]`` answers ``R`` (a :class:`ledger.results.Result`).
    ``scope`` namespaces request ids (operator or one session)."""

    name: ClassVar[str]
    result_type: ClassVar[type[Any]] = dict
    """``R`` at run time (read from the class's base), to read a recorded answer back."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, Result):
                    cls.result_type = arg

    @classmethod
    def handled_by(cls, handler: Handler[Self, R]) -> Route[Self, R]:
        """This command's handler, for :class:`ledger.handlers.Handlers` (mypy checks that
        it takes this command and answers this command's result type)."""
        return Route(cls, handler)

    @classmethod
    def answer_from(cls, wire: Mapping[str, Any]) -> R:
        """The result a request record stores (its wire form), as this command answers."""
        kind = cls.result_type
        return cast(R, kind.from_wire(wire) if issubclass(kind, Result) else dict(wire))

    @property
    def scope(self) -> str:
        return OPERATOR

    def body(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SessionCommand(Command[R]):
    """A player's command on one game session; request ids are scoped to the session."""

    session_id: str

    def __post_init__(self) -> None:
        _canonical_id(self, "session_id")

    @property
    def scope(self) -> str:
        return f"session:{self.session_id}"


@dataclass(frozen=True)
class GameDecision(SessionCommand[R]):
    """A decision on the session's open round; recorded as ``{session_id, decision}``."""

    def decision(self) -> list[Any]:
        raise NotImplementedError

    def body(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "decision": self.decision()}


# -- accounts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenAccount(Command[AccountOpened]):
    name: ClassVar[str] = "open_account"
    player_id: str
    currency: str

    def __post_init__(self) -> None:
        if not isinstance(self.player_id, str) or not 0 < len(self.player_id) <= 100:
            raise InvalidRequest("player id must be a non-empty string of at most 100 characters")
        check_currency(self.currency)


@dataclass(frozen=True)
class Deposit(Command[AccountMoved]):
    name: ClassVar[str] = "deposit"
    player_id: str
    amount: int

    def __post_init__(self) -> None:
        check_amount(self.amount)


@dataclass(frozen=True)
class Withdraw(Command[AccountMoved]):
    name: ClassVar[str] = "withdraw"
    player_id: str
    amount: int

    def __post_init__(self) -> None:
        check_amount(self.amount)


# -- sessions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenSession(Command[SessionOpened]):
    name: ClassVar[str] = "open_session"
    player_id: str
    buy_in: int
    currency: str | None = None

    def __post_init__(self) -> None:
        check_amount(self.buy_in, "buy-in")


@dataclass(frozen=True)
class CloseSession(Command[SessionClosed]):
    """Operator command; an open round first completes by its default action."""

    name: ClassVar[str] = "close_session"
    session_id: str

    def __post_init__(self) -> None:
        _canonical_id(self, "session_id")


def check_void_grounds(reason: object, incident_id: object) -> None:
    """A void (seed 002: after a malfunction) names its reason and the incident."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidRequest("a void needs a reason")
    if not isinstance(incident_id, str) or not incident_id.strip():
        raise InvalidRequest("a void needs an incident id")


@dataclass(frozen=True)
class VoidRound(Command[RoundVoided]):
    name: ClassVar[str] = "void"
    code: str
    reason: str
    incident_id: str

    def __post_init__(self) -> None:
        check_void_grounds(self.reason, self.incident_id)


# -- Red Dog (seed 003) --------------------------------------------------------------------


@dataclass(frozen=True)
class RedDogBet(SessionCommand[RoundPlayed]):
    name: ClassVar[str] = "red_dog_bet"
    bet: int


@dataclass(frozen=True)
class RedDogRepeat(SessionCommand[RoundPlayed]):
    """seed 003 "Ripeti": the bet is the session's last Red Dog bet, read in the handler."""

    name: ClassVar[str] = "red_dog_repeat"


@dataclass(frozen=True)
class RedDogRaise(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "red_dog_raise"
    amount: int

    def decision(self) -> list[Any]:
        return ["raise", self.amount]


@dataclass(frozen=True)
class RedDogSee(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "red_dog_see"

    def decision(self) -> list[Any]:
        return ["see"]


# -- Jacks or Better (seeds 000 and 004) ---------------------------------------------------


@dataclass(frozen=True)
class VideoPokerDeal(SessionCommand[RoundPlayed]):
    name: ClassVar[str] = "vp_deal"
    variant: str
    coin_value: int
    coins: int
    lines: int


@dataclass(frozen=True)
class VideoPokerHold(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "vp_hold"
    holds: Any

    def __post_init__(self) -> None:
        super().__post_init__()
        _as_tuple(self, "holds")

    def decision(self) -> list[Any]:
        return ["hold", _listed(self.holds)]


@dataclass(frozen=True)
class VideoPokerDraw(GameDecision[RoundPlayed]):
    """``holds=None``: the last hold step, else the proposal (filled in by the handler)."""

    name: ClassVar[str] = "vp_draw"
    holds: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _as_tuple(self, "holds")

    def decision(self) -> list[Any]:
        return ["draw"] if self.holds is None else ["draw", _listed(self.holds)]


@dataclass(frozen=True)
class VideoPokerCollect(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "vp_collect"

    def decision(self) -> list[Any]:
        return ["collect"]


@dataclass(frozen=True)
class VideoPokerDouble(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "vp_double"

    def decision(self) -> list[Any]:
        return ["double"]


@dataclass(frozen=True)
class VideoPokerHalfDouble(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "vp_half-double"

    def decision(self) -> list[Any]:
        return ["half-double"]


@dataclass(frozen=True)
class VideoPokerPick(GameDecision[RoundPlayed]):
    name: ClassVar[str] = "vp_pick"
    index: Any

    def decision(self) -> list[Any]:
        return ["pick", self.index]


# -- any registered game ------------------------------------------------------------------


@dataclass(frozen=True)
class StartRound(SessionCommand[RoundPlayed]):
    """Start a round of any registered game; its adapter reads ``params`` (as sent)."""

    name: ClassVar[str] = "start_round"
    game: str
    params: Any


@dataclass(frozen=True)
class Decide(GameDecision[RoundPlayed]):
    """A decision on the open round of any registered game (its wire form, as sent)."""

    name: ClassVar[str] = "decide"
    game: str
    step: Any

    def decision(self) -> list[Any]:
        return list(self.step) if isinstance(self.step, list | tuple) else [self.step]

    def body(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "game": self.game, "decision": self.decision()}


# -- wire decisions (in-process callers and tests) -----------------------------------------


def red_dog_command(session_id: str, decision: Sequence[Any]) -> GameDecision[RoundPlayed]:
    """The command of a wire decision ``["see"]`` or ``["raise", amount]``."""
    if not isinstance(decision, str | bytes) and isinstance(decision, Sequence) and decision:
        head, *args = decision
        if head == "see" and not args:
            return RedDogSee(session_id)
        if head == "raise" and len(args) == 1:
            return RedDogRaise(session_id, args[0])
    raise InvalidDecision(f"not a Red Dog decision (raise or see): {decision!r}")


def video_poker_command(session_id: str, decision: Sequence[Any]) -> GameDecision[RoundPlayed]:
    """The command of a wire decision such as ``["draw", [0, 2]]`` (in-process callers)."""
    if isinstance(decision, str | bytes) or not isinstance(decision, Sequence) or not decision:
        raise InvalidDecision(
            f"a decision is a list such as ['draw', [0, 2]] or ['collect'], got {decision!r}"
        )
    head, *args = decision
    if head == "hold" and len(args) == 1:
        return VideoPokerHold(session_id, args[0])
    if head == "draw" and not args:
        return VideoPokerDraw(session_id)
    if head == "draw" and len(args) == 1 and args[0] is not None:  # None: "no holds" is ["draw"]
        return VideoPokerDraw(session_id, args[0])
    if head == "pick" and len(args) == 1:
        return VideoPokerPick(session_id, args[0])
    simple: dict[object, type[GameDecision[RoundPlayed]]] = {
        "collect": VideoPokerCollect,
        "double": VideoPokerDouble,
        "half-double": VideoPokerHalfDouble,
    }
    if isinstance(head, str) and head in simple and not args:
        return simple[head](session_id)
    raise InvalidDecision(f"not a Jacks or Better decision: {list(decision)!r}")
