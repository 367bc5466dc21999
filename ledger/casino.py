"""The Casino application: the one place that saves events (money, sessions, rounds).

Every command is idempotent by request id and runs as: load, validate, decide, then save
all touched aggregates plus the request record in one ``save`` (one transaction). A
version conflict reloads and re-runs the whole command.
"""

from __future__ import annotations

import fcntl
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError, OperationalError

from games.errors import GameRuleError
from ledger.accounts import Account, GameSession, account_id_for
from ledger.errors import (
    AccountExists,
    AccountNotFound,
    Contention,
    CurrencyMismatch,
    IdempotencyConflict,
    InvalidRequest,
    LedgerError,
    SessionNotFound,
    TamperDetected,
)
from ledger.keys import Keyring
from ledger.money import check_amount, check_currency
from ledger.play import GameAdapter, RoundCommands
from ledger.red_dog import RedDogAdapter, RedDogCommands
from ledger.requests import (
    Request,
    body_digest,
    check_request_id,
    for_request,
    request_aggregate_id,
)
from ledger.rounds import new_seed
from ledger.settings import APP_NAME, Settings
from ledger.store import SigningEventStore, VerifyingMapper
from ledger.video_poker import VideoPokerAdapter, VideoPokerCommands

log = logging.getLogger("croupier")
A = TypeVar("A", bound=Aggregate)
Result = dict[str, Any]
MAX_ATTEMPTS = 50
OPERATOR = "operator"


class Casino(RedDogCommands, VideoPokerCommands, RoundCommands, Application[UUID]):
    """Event-sourced ledger of accounts and game sessions with a signed, checkpointed log."""

    name = APP_NAME

    def __init__(
        self,
        settings: Settings | None = None,
        keyring: Keyring | None = None,
        seed_source: Callable[[], bytes] = new_seed,
    ) -> None:
        """``seed_source`` gives each round its 256-bit seed: the OS CSPRNG in production;
        the certification simulation passes a deterministic one derived from a master seed."""
        self.settings = settings or Settings()
        self.seed_source = seed_source
        self.keyring = keyring or self.settings.keyring()
        env = self.settings.eventsourcing_env()
        if "SQLITE_DBNAME" in env:
            # Processes starting together on one SQLite file race to switch it to WAL and
            # create the tables ("database is locked"): take turns on a lock file.
            with _file_lock(Path(env["SQLITE_DBNAME"]).with_suffix(".lock")):
                super().__init__(env=env)
        else:
            super().__init__(env=env)
        self.adapters: dict[str, GameAdapter] = {
            "red-dog": RedDogAdapter(),
            "video-poker": VideoPokerAdapter(),
        }
        from ledger.checkpoints import Sealer

        self.sealer = Sealer(self)
        from ledger import trust  # key history: genesis, rotations (may refuse to start)

        self.key_history = trust.attach(self)
        from ledger.projections import History

        self.history = History(self)

    # -- infrastructure hooks ---------------------------------------------------------

    def construct_mapper(self) -> VerifyingMapper:
        mapper = self.factory.mapper(
            transcoder=self.construct_transcoder(), mapper_class=VerifyingMapper
        )
        assert isinstance(mapper, VerifyingMapper)
        mapper.keyring = self.keyring
        return mapper

    def construct_event_store(self) -> SigningEventStore:
        assert isinstance(self.mapper, VerifyingMapper)
        return SigningEventStore(self.mapper, self.recorder)

    # -- plumbing ---------------------------------------------------------------------

    def find(self, cls: type[A], aggregate_id: UUID) -> A | None:
        try:
            agg: Aggregate = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        if not isinstance(agg, cls):
            return None
        return agg

    def command(
        self,
        scope: str,
        request_id: str,
        command: str,
        body: dict[str, Any],
        action: Callable[[], tuple[list[Aggregate], Result]],
    ) -> Result:
        """Run ``action`` at most once per (scope, request id); see module docstring."""
        check_request_id(request_id)
        rid = request_aggregate_id(scope, request_id)
        digest = body_digest(command, body)
        action = for_request(rid, digest, action)  # movements name their request
        for attempt in range(MAX_ATTEMPTS):
            prior = self.find(Request, rid)
            if prior is not None:
                if prior.digest != digest or prior.command != command:
                    raise IdempotencyConflict(
                        f"request id {request_id!r} was already used for a different request",
                        request_id=request_id,
                    )
                return dict(prior.result)
            try:
                touched, result = action()
            except (LedgerError, GameRuleError):
                # A duplicate of a request still in flight can be refused (the session is
                # busy with the original): if the original has landed, answer with it.
                landed = self.find(Request, rid)
                if landed is not None and landed.digest == digest and landed.command == command:
                    return dict(landed.result)
                raise
            record = Request(
                scope=scope, request_id=request_id, command=command, digest=digest, result=result
            )
            try:
                self.save(*touched, record)
            except (IntegrityError, OperationalError):
                # Another writer got there first (or SQLite was busy): reload, re-run.
                time.sleep(min(0.001 * 2**attempt, 0.05))
                continue
            self.sealer.maybe_seal()
            return result
        raise Contention(f"could not complete {command} after {MAX_ATTEMPTS} attempts")

    def _account(self, player_id: str) -> Account:
        account = self.find(Account, account_id_for(player_id))
        if account is None:
            raise AccountNotFound(f"no account for player {player_id!r}", player_id=player_id)
        return account

    def _session(self, session_id: UUID | str) -> GameSession:
        try:
            sid = session_id if isinstance(session_id, UUID) else UUID(str(session_id))
        except ValueError:
            raise SessionNotFound(
                f"no game session {session_id!r}", session_id=session_id
            ) from None
        session = self.find(GameSession, sid)
        if session is None:
            raise SessionNotFound(f"no game session {session_id}", session_id=session_id)
        return session

    # -- accounts ---------------------------------------------------------------------

    def open_account(self, request_id: str, player_id: str, currency: str) -> Result:
        if not isinstance(player_id, str) or not 0 < len(player_id) <= 100:
            raise InvalidRequest("player id must be a non-empty string of at most 100 characters")
        check_currency(currency)

        def action() -> tuple[list[Aggregate], Result]:
            if self.find(Account, account_id_for(player_id)) is not None:
                raise AccountExists(
                    f"player {player_id!r} already has an account", player_id=player_id
                )
            account = Account(player_id=player_id, currency=currency)
            return [account], {"player_id": player_id, "currency": currency, "balance": 0}

        return self.command(
            OPERATOR,
            request_id,
            "open_account",
            {"player_id": player_id, "currency": currency},
            action,
        )

    def deposit(self, request_id: str, player_id: str, amount: int) -> Result:
        check_amount(amount)

        def action() -> tuple[list[Aggregate], Result]:
            account = self._account(player_id)
            account.deposit(amount)
            return [account], {"player_id": player_id, "balance": account.balance}

        return self.command(
            OPERATOR, request_id, "deposit", {"player_id": player_id, "amount": amount}, action
        )

    def withdraw(self, request_id: str, player_id: str, amount: int) -> Result:
        check_amount(amount)

        def action() -> tuple[list[Aggregate], Result]:
            account = self._account(player_id)
            account.withdraw(amount)
            return [account], {"player_id": player_id, "balance": account.balance}

        return self.command(
            OPERATOR, request_id, "withdraw", {"player_id": player_id, "amount": amount}, action
        )

    def account_balance(self, player_id: str) -> int:
        return int(self._account(player_id).balance)

    # -- game sessions ----------------------------------------------------------------

    def open_session(
        self, request_id: str, player_id: str, buy_in: int, currency: str | None = None
    ) -> Result:
        check_amount(buy_in, "buy-in")

        def action() -> tuple[list[Aggregate], Result]:
            account = self._account(player_id)
            if currency is not None and currency != account.currency:
                raise CurrencyMismatch(
                    f"account is in {account.currency}, buy-in in {currency}", player_id=player_id
                )
            session = GameSession(
                account_id=account.id, player_id=player_id, currency=account.currency, buy_in=buy_in
            )
            account.fund_session(session.id, buy_in)
            return [account, session], {
                "session_id": str(session.id),
                "player_id": player_id,
                "currency": account.currency,
                "balance": buy_in,
                "account_balance": account.balance,
            }

        return self.command(
            OPERATOR,
            request_id,
            "open_session",
            {"player_id": player_id, "buy_in": buy_in, "currency": currency},
            action,
        )

    def close_session(self, request_id: str, session_id: UUID | str) -> Result:
        def action() -> tuple[list[Aggregate], Result]:
            session = self._session(session_id)
            session.check_open()
            completed = self.complete_with_default(session)
            final = session.close()
            account: Account = self.repository.get(session.account_id)
            touched: list[Aggregate] = [session]
            if completed is not None:
                touched.append(completed)
            if final > 0:
                account.return_session(session.id, final)
                touched.append(account)
            return touched, {
                "session_id": str(session.id),
                "final_balance": final,
                "account_balance": account.balance,
            }

        return self.command(
            OPERATOR, request_id, "close_session", {"session_id": str(session_id)}, action
        )

    def session_balance(self, session_id: UUID | str) -> int:
        return int(self._session(session_id).balance)

    def get_session(self, session_id: UUID | str) -> GameSession:
        return self._session(session_id)

    def _session_movement(
        self,
        request_id: str,
        name: str,
        session_id: UUID | str,
        round_id: str,
        amount: int,
        apply: Callable[[GameSession], None],
    ) -> Result:
        check_amount(amount)
        if not isinstance(round_id, str) or not round_id:
            raise InvalidRequest("round id must be a non-empty string")

        def action() -> tuple[list[Aggregate], Result]:
            session = self._session(session_id)
            apply(session)
            return [session], {
                "session_id": str(session.id),
                "round_id": round_id,
                "amount": amount,
                "balance": session.balance,
            }

        return self.command(
            OPERATOR,
            request_id,
            name,
            {"session_id": str(session_id), "round_id": round_id, "amount": amount},
            action,
        )

    def stake(self, request_id: str, session_id: UUID | str, round_id: str, amount: int) -> Result:
        return self._session_movement(
            request_id, "stake", session_id, round_id, amount, lambda s: s.stake(round_id, amount)
        )

    def credit_win(
        self, request_id: str, session_id: UUID | str, round_id: str, amount: int
    ) -> Result:
        return self._session_movement(
            request_id,
            "credit_win",
            session_id,
            round_id,
            amount,
            lambda s: s.credit_win(round_id, amount),
        )

    def refund(self, request_id: str, session_id: UUID | str, round_id: str, amount: int) -> Result:
        return self._session_movement(
            request_id, "refund", session_id, round_id, amount, lambda s: s.refund(round_id, amount)
        )

    # -- checkpoints ------------------------------------------------------------------

    def seal(self) -> dict[str, Any] | None:
        """Write a signed checkpoint over every event stored so far (None if none new)."""
        return self.sealer.seal()

    def close(self) -> None:
        if getattr(self, "_closed", False):
            return
        self._closed = True
        try:
            self.sealer.stop()
            if not sys.is_finalizing():  # never from __del__ at interpreter exit
                try:
                    self.seal()
                except (TamperDetected, OperationalError) as e:
                    # Never checkpoint over a tampered (or unreadable) log; closing must
                    # still release the store, and `audit-cli verify` will name the damage.
                    log.error("not sealing on close: %s", e)
        finally:
            super().close()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
