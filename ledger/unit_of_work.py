"""The unit of work of one command attempt: what it loaded, what it created, saved together.

Handlers load aggregates through it (``account``, ``session``, ``round``, or ``get``) and
hand it new ones (``add``); the application then saves every aggregate the attempt
touched, plus the request record, in one transaction. An aggregate loaded but left
unchanged contributes no event, so a handler cannot forget to save what it changed.
Values that must stay the same across the attempts of one command (the round's seed: a
retried attempt deals the same cards) come from ``once``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from ledger.accounts import Account, GameSession, account_id_for
from ledger.errors import AccountNotFound, RoundNotFound, SessionNotFound
from ledger.rounds import Round, round_id_for

A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")
Find = Callable[[type[A], UUID], A | None]


class UnitOfWork:
    def __init__(
        self,
        find: Callable[[type[Any], UUID], Any],
        memo: dict[str, Any],
        read: Callable[[type[Any], UUID], Any] | None = None,
    ) -> None:
        self._find = find
        self._read = read or find
        self._memo = memo
        self._touched: dict[UUID, Aggregate] = {}

    # -- loading -----------------------------------------------------------------------

    def get(self, cls: type[A], aggregate_id: UUID) -> A | None:
        """The aggregate as this attempt sees it (loaded once per attempt), or None."""
        held = self._touched.get(aggregate_id)
        if held is not None:
            return held if isinstance(held, cls) else None
        found = self._find(cls, aggregate_id)
        if isinstance(found, cls):
            self._touched[aggregate_id] = found
            return found
        return None

    def read(self, cls: type[A], aggregate_id: UUID) -> A | None:
        """The aggregate for reading only, or None: never change what this returns (in a
        group-commit batch it may be the process cache's own object, not a copy;
        :meth:`ledger.group_commit.BatchView.read`). What this attempt has loaded to
        change (:meth:`get`) is what it reads."""
        held = self._touched.get(aggregate_id)
        if held is not None:
            return held if isinstance(held, cls) else None
        found = self._read(cls, aggregate_id)
        return found if isinstance(found, cls) else None

    def hold(self, aggregate: Aggregate) -> None:
        """Start this attempt from ``aggregate`` as the caller just loaded it (its own
        copy) instead of loading it again."""
        self._touched.setdefault(aggregate.id, aggregate)

    def account(self, player_id: str) -> Account:
        account = self.get(Account, account_id_for(player_id))
        if account is None:
            raise AccountNotFound(f"no account for player {player_id!r}", player_id=player_id)
        return account

    def account_by_id(self, account_id: UUID) -> Account:
        account = self.get(Account, account_id)
        if account is None:  # a session always names an existing account
            raise AccountNotFound(f"no account {account_id}")
        return account

    def session(self, session_id: UUID | str) -> GameSession:
        try:
            sid = session_id if isinstance(session_id, UUID) else UUID(str(session_id))
        except ValueError:
            raise SessionNotFound(
                f"no game session {session_id!r}", session_id=session_id
            ) from None
        session = self.get(GameSession, sid)
        if session is None:
            raise SessionNotFound(f"no game session {session_id}", session_id=session_id)
        return session

    def round(self, code: str) -> Round:
        if not isinstance(code, str) or not code:
            raise RoundNotFound("a game code is required")
        rnd = self.get(Round, round_id_for(code))
        if rnd is None:
            raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
        return rnd

    # -- changing ----------------------------------------------------------------------

    def add(self, *aggregates: Aggregate) -> None:
        """New aggregates created by the handler, saved with the rest."""
        for agg in aggregates:
            self._touched[agg.id] = agg

    def touched(self) -> list[Aggregate]:
        return list(self._touched.values())

    def once(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` the first time in this command, the same value on every retry."""
        if key not in self._memo:
            self._memo[key] = make()
        value: T = self._memo[key]
        return value
