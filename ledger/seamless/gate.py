"""At most once for debits: how a stake on a seamless session is taken.

:meth:`StakeGate.run` takes a command that would stake (a bet, a deal, a raise) on a
seamless session through four steps, none of which holds the group-commit writer or a
transaction while the wallet answers:

1. probe: the command's own handler runs on a scratch unit of work (nothing saved) up to
   the stake, which names the game code, the stage and the amount; the transaction id
   derives from the code and the stage;
2. ``IntendStake``: the debit's intent is an event on the session (which is busy until
   its outcome), committed before anything is sent (it shares its batch's transaction
   with other sessions' commands: one commit for many intents);
3. the debit, sent once (:meth:`wallet.client.WalletClient.debit`);
4. ``FinishStake`` under the caller's request id: the outcome is an event; if accepted,
   the command's handler runs again with that stake authorised and the round starts in
   the same transaction; if unknown, a rollback of that transaction id is queued.

A retry of the request finds the recorded answer, or the intent without an outcome: then
the debit is never sent again; its outcome is taken as unknown and rolled back. So is an
intent found without an outcome when croupier starts (:meth:`recover`), once it is older
than any debit can take (another worker on the same store may be sending a younger one).

A live table's bets and decisions come through here too (their stages:
:func:`ledger.seamless.port.table_stake`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from games.errors import GameRuleError
from ledger import commands as c
from ledger.accounts import GameSession
from ledger.casino import Casino
from ledger.contracts import DebitOutcome
from ledger.errors import IdempotencyConflict, InsufficientFunds, LedgerError
from ledger.requests import MAX_REQUEST_ID, Request, body_digest, request_aggregate_id
from ledger.results import StakeFinished, Wire
from ledger.seamless import port
from ledger.seamless.book import OpenItems
from ledger.seamless.claim import GameCodeTaken
from ledger.seamless.commands import FinishStake, IntendStake
from ledger.seamless.errors import StakeRolledBack, WalletRefused, WalletUnavailable
from ledger.seamless.wire import from_wire, to_wire
from ledger.tables import commands as tc
from ledger.unit_of_work import UnitOfWork
from wallet.client import WalletClient
from wallet.protocol import Transaction

log = logging.getLogger("croupier.wallet")
R = TypeVar("R")

STAKING = (
    c.RedDogBet,
    c.RedDogRepeat,
    c.RedDogRaise,
    c.VideoPokerDeal,
    c.StartRound,
    c.Decide,
    tc.PlaceBet,
    tc.RepeatBets,
    tc.DoubleBets,
    tc.AllSideBets,
    tc.TableDecide,
)
"""Commands that may take a stake (a start, a bet, or a decision that adds one)."""
RECOVER_MARGIN_SECONDS = 30.0
"""Start-up recovery leaves alone a debit intent younger than the longest a wallet client
may wait on a debit plus this margin: another live process may still be sending it."""
RESTARTED = "croupier stopped between the debit's intent and its outcome"
RETRIED = "the request was retried after its debit was sent; its outcome was not recorded"
STALE = "the debit's request failed before its outcome was recorded"
_STRIPES = 256
CODE_DRAWS = 5
"""Probes a stake may make for a game code nobody has claimed (each draw has 20 random
bits for the second: a second clash in a row is already about one in a million)."""


def sub_request(request_id: str, step: str) -> str:
    rid = f"{request_id}#{step}"
    if len(rid) <= MAX_REQUEST_ID:
        return rid
    return f"{hashlib.sha256(request_id.encode()).hexdigest()}#{step}"


class StakeGate:
    def __init__(
        self, casino: Casino, wallets: Mapping[str, WalletClient], open_items: OpenItems
    ) -> None:
        self.casino = casino
        self.wallets = wallets
        self.open_items = open_items
        self._locks = [threading.Lock() for _ in range(_STRIPES)]
        self._in_flight: set[str] = set()  # debits this process is sending or recording
        self._guard = threading.Lock()

    def wants(self, cmd: c.Command[Any]) -> bool:
        return isinstance(cmd, STAKING)

    def run(self, request_id: str, cmd: c.Command[R]) -> R | None:
        """The command's answer, or None: not a seamless stake (run it as usual)."""
        session_id = getattr(cmd, "session_id", None)  # every staking command has one
        if not isinstance(session_id, str):
            return None
        session = self.casino.cached_session(session_id)
        if not session.seamless:
            return None
        lock = self._locks[hash(str(session.id)) % _STRIPES]
        digest = body_digest(cmd.name, cmd.body())
        with lock:  # one stake at a time per session in this process
            final = self._recorded(cmd.scope, request_id)
            # The intent is looked up on a retry (an answer recorded: its digest says
            # whether it is the same request) or while the session has a debit pending
            # (an intent without its outcome can only exist then). Otherwise a recorded
            # intent of this request id (its outcome since resolved by another request)
            # collides when the new intent's record is saved, and that answers with it.
            intent = (
                self._recorded(cmd.scope, sub_request(request_id, "intent"))
                if final is not None or session.pending_debit is not None
                else None
            )
            intended = None if intent is None else IntendStake.answer_from(intent.result)
            if intended is not None and intended.digest != digest:
                raise IdempotencyConflict(
                    f"request id {request_id!r} was already used for a different request",
                    request_id=request_id,
                )
            if final is not None:
                if final.command != FinishStake.name:
                    raise IdempotencyConflict(
                        f"request id {request_id!r} was already used for a different request",
                        request_id=request_id,
                    )
                return cmd.answer_from(answer(FinishStake.answer_from(final.result)))
            if intended is not None:
                debit = from_wire(intended.transaction)
                return self._send_once(request_id, cmd, session_id, session, debit, digest, False)
            for draw in range(CODE_DRAWS):
                needed = self._probe(cmd, session)
                if needed is None:
                    return None
                debit = Transaction.debit(
                    session.player_id, needed.code, needed.stage, needed.amount, session.currency
                )
                try:
                    return self._send_once(
                        request_id, cmd, session_id, session, debit, digest, True
                    )
                except GameCodeTaken:
                    # Another round claimed the code this probe drew (nothing was sent):
                    # the next probe draws another.
                    if draw == CODE_DRAWS - 1:
                        raise
            raise AssertionError("unreachable")

    def _send_once(
        self,
        request_id: str,
        cmd: c.Command[R],
        session_id: str,
        session: GameSession,
        debit: Transaction,
        digest: str,
        fresh: bool,
    ) -> R:
        """Record the intent (if ``fresh``), send the debit only if this request recorded
        it, and record the outcome."""
        tid = str(debit.transaction_id)
        with self._guard:  # before the intent exists: resolve_stale never sees it idle
            self._in_flight.add(tid)
        try:
            if fresh:
                recorded = self.casino.command(
                    sub_request(request_id, "intent"),
                    IntendStake(session_id, request_id, to_wire(debit), digest),
                )
                fresh = recorded.transaction["transaction_id"] == tid
                debit = from_wire(recorded.transaction)
            return self._finish(request_id, cmd, session_id, session.operator or "", debit, fresh)
        finally:
            with self._guard:
                self._in_flight.discard(tid)

    def _finish(
        self,
        request_id: str,
        cmd: c.Command[R],
        session_id: str,
        operator: str,
        debit: Transaction,
        fresh: bool,
    ) -> R:
        """Send the debit (only by the request that recorded its intent) and record its
        outcome; if accepted, the round starts in that same transaction."""
        finish = self._debit(operator, debit, cmd) if fresh else None
        if finish is None:
            finish = FinishStake(session_id, str(debit.transaction_id), "unknown", RETRIED)
        try:
            return cmd.answer_from(answer(self.casino.command(request_id, finish)))
        except (LedgerError, GameRuleError) as e:
            if finish.outcome != DebitOutcome.ACCEPTED:
                raise
            # Accepted, but the round could not start now: give the stake back.
            log.warning("wallet debit %s accepted but %s: rolled back", debit.transaction_id, e)
            cause = f"the round could not start ({getattr(e, 'code', type(e).__name__)})"
            self.casino.command(
                sub_request(request_id, "undo"),
                FinishStake(
                    session_id,
                    str(debit.transaction_id),
                    "accepted",
                    cause,
                    wallet_balance=finish.wallet_balance,
                ),
            )
            raise

    def _debit(self, operator: str, debit: Transaction, cmd: c.Command[Any]) -> FinishStake:
        session_id = getattr(cmd, "session_id", "")
        client = self.wallets.get(operator)
        if client is None:
            cause = f"no wallet client for operator {operator!r}"
            log.error("wallet debit %s unknown: %s", debit.transaction_id, cause)
            return FinishStake(session_id, str(debit.transaction_id), "unknown", cause)
        result = client.debit(debit)
        return FinishStake(
            session_id,
            str(debit.transaction_id),
            str(result.outcome),
            result.cause,
            None if result.error is None else str(result.error),
            result.balance,
            cmd if result.outcome.value == DebitOutcome.ACCEPTED else None,
        )

    def _probe(self, cmd: c.Command[Any], session: GameSession) -> port.StakeNeeded | None:
        """What ``cmd`` would stake, from a scratch run of its handler that starts from
        ``session`` as just loaded (a copy: nothing of the scratch run is saved)."""
        handler = self.casino.handlers[type(cmd)]
        uow = UnitOfWork(self.casino.find, {})
        uow.hold(session)
        with port.probing():
            try:
                handler(uow, cmd)
            except port.StakeNeeded as needed:
                return needed
        return None

    def _recorded(self, scope: str, request_id: str) -> Request | None:
        return self.casino.find(Request, request_aggregate_id(scope, request_id))

    def resolve_stale(self, older_than: float, now: float | None = None) -> int:
        """While serving: a debit intent without an outcome that no request of this process
        is handling (its request failed after the debit, e.g. the store was briefly
        unavailable) and older than ``older_than`` seconds is unknown: roll it back."""
        now = time.time() if now is None else now
        with self._guard:
            busy = set(self._in_flight)
        stale = [
            e
            for e in self.open_items.catch_up().pending_outcomes()
            if e.transaction_id not in busy
            and now - datetime.fromisoformat(e.time).timestamp() >= older_than
        ]
        for entry in stale:
            log.warning(
                "wallet debit %s: no outcome after %.0f s; rolling it back",
                entry.transaction_id,
                older_than,
            )
            self.casino.command(
                f"stale:{entry.transaction_id}",
                FinishStake(entry.session_id, entry.transaction_id, "unknown", STALE),
            )
        return len(stale)

    def longest_debit(self) -> float:
        """Seconds the longest debit of any wallet client can take (every timeout)."""
        return max((w.longest_call() for w in self.wallets.values()), default=0.0)

    def recover(self, now: float | None = None) -> int:
        """At start: a debit intent without an outcome is unknown (croupier stopped between
        sending it and recording what came back): roll it back. Only one older than the
        longest debit plus a margin: with several workers on one store (PostgreSQL,
        ``serve --workers N``) a younger one may be in flight in another live process;
        it is left to :meth:`resolve_stale`, which runs while serving."""
        now = time.time() if now is None else now
        older_than = self.longest_debit() + RECOVER_MARGIN_SECONDS
        pending = [
            e
            for e in self.open_items.catch_up().pending_outcomes()
            if now - datetime.fromisoformat(e.time).timestamp() >= older_than
        ]
        for entry in pending:
            log.warning("wallet debit %s: %s; rolling it back", entry.transaction_id, RESTARTED)
            self.casino.command(
                f"recover:{entry.transaction_id}",
                FinishStake(entry.session_id, entry.transaction_id, "unknown", RESTARTED),
            )
        return len(pending)


def answer(finished: StakeFinished) -> Wire:
    """The player's answer to a seamless stake (the wire form of the staking command's
    result, with the wallet's balance), or the typed refusal."""
    outcome = finished.stake_outcome
    ids = {"session_id": finished.session_id, "transaction_id": finished.transaction_id}
    cause = finished.cause or ""
    if outcome == DebitOutcome.REFUSED:
        if finished.error == "insufficient-funds":
            raise InsufficientFunds(
                f"the operator's wallet balance {finished.balance} cannot cover the stake",
                **ids,
            )
        raise WalletRefused(f"the operator's wallet refused the stake: {cause}", **ids)
    if outcome == "rolled-back":
        raise StakeRolledBack(f"the stake was accepted but rolled back: {cause}", **ids)
    if outcome != DebitOutcome.ACCEPTED:
        raise WalletUnavailable(
            f"the operator's wallet did not answer the stake ({cause}); no round started and"
            " the debit is rolled back",
            **ids,
        )
    return finished.wire()
