"""The client croupier uses to call an operator's seamless wallet (:mod:`wallet.protocol`).

Synchronous on purpose: croupier's commands run synchronously (the API's endpoints are plain
``def`` functions that FastAPI runs in worker threads, and the event store is synchronous), so
one thread-safe ``httpx.Client`` with a bounded pool is shared by all of them; concurrent
rounds overlap their wallet latency across those threads.

- :meth:`WalletClient.debit` is *at most once*: one attempt, answered ``accepted``,
  ``refused`` or ``unknown``. On ``unknown`` (timeout, 5xx, malformed, unsigned or
  mis-signed answer, wrong amount or currency) the caller must send
  :meth:`WalletClient.rollback` of that same transaction, never a new debit.
- :meth:`WalletClient.credit` and :meth:`WalletClient.rollback` are *at least once*: retried
  with the same transaction id (:func:`wallet.delivery.deliver_until_acknowledged`) until
  the wallet acknowledges; a ``duplicate-transaction`` answer to an accepted call counts.
"""

from __future__ import annotations

import logging
import random as _random
import time as _time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from types import TracebackType

import httpx
from pydantic import ValidationError

from ledger import metrics
from wallet import signing
from wallet.delivery import (
    Attempt,
    AttemptKind,
    Delivery,
    RetryPolicy,
    deliver_until_acknowledged,
)
from wallet.http import PooledHttp
from wallet.protocol import (
    BalanceRequest,
    Call,
    ErrorCode,
    RollbackRequest,
    Status,
    Transaction,
    WalletRequest,
    WalletResponse,
)

log = logging.getLogger("croupier.wallet")


@dataclass(frozen=True)
class Timeouts:
    """Seconds. ``read`` bounds how long a debit may keep a round waiting."""

    connect: float = 2.0
    read: float = 5.0
    write: float = 5.0
    pool: float = 2.0


class DebitOutcome(StrEnum):
    ACCEPTED = "accepted"  # the stake is taken: the round may start
    REFUSED = "refused"  # the wallet said no (signed): nothing was taken
    UNKNOWN = "unknown"  # no trustworthy answer: roll this transaction back


@dataclass(frozen=True)
class DebitResult:
    outcome: DebitOutcome
    transaction: Transaction
    balance: int | None = None  # the wallet's balance, when it answered
    error: ErrorCode | None = None  # the wallet's error code, when it refused
    cause: str | None = None  # why refused or unknown, for the log and the event


class WalletUnavailable(Exception):
    """No trustworthy answer from the wallet (timeout, 5xx, bad answer)."""

    def __init__(self, call: Call, cause: str) -> None:
        super().__init__(f"wallet {call} unavailable: {cause}")
        self.call = call
        self.cause = cause


class WalletRefused(Exception):
    """A signed refusal from the wallet."""

    def __init__(self, call: Call, error: ErrorCode, message: str) -> None:
        super().__init__(f"wallet {call} refused: {error} {message}".rstrip())
        self.call = call
        self.error = error


@dataclass(frozen=True)
class _Failure:
    cause: str
    outcome: str = "untrusted"  # the metrics' label: timeout, transport, http-5xx, untrusted


# Signed refusals of a credit or rollback that the same body will always get again.
_FINAL = frozenset(
    {
        ErrorCode.UNKNOWN_PLAYER,
        ErrorCode.CURRENCY_MISMATCH,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.TRANSACTION_CONFLICT,
        ErrorCode.INSUFFICIENT_FUNDS,
        ErrorCode.ROLLED_BACK,
    }
)


class WalletClient:
    """One operator's wallet at ``base_url``, signed with ``key``. Thread-safe; close it (or
    use it as a context manager) to release the connection pool.

    ``http`` replaces the HTTP client (e.g. a Starlette ``TestClient`` for in-process tests);
    ``pooled=True`` uses :class:`wallet.http.PooledHttp` (the standard library's
    ``http.client``, a quarter of httpx's CPU per call) instead of ``httpx.Client``;
    ``sleep``, ``clock``, ``random`` and ``now`` drive retries and timestamps in tests.
    """

    def __init__(
        self,
        base_url: str,
        key: bytes,
        *,
        timeouts: Timeouts | None = None,
        max_connections: int = 50,
        retry: RetryPolicy | None = None,
        http: httpx.Client | PooledHttp | None = None,
        pooled: bool = False,
        sleep: Callable[[float], None] = _time.sleep,
        clock: Callable[[], float] = _time.monotonic,
        random: Callable[[], float] = _random.random,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        t = timeouts or Timeouts()
        if http is None and pooled:
            http = PooledHttp(
                base_url,
                connect=t.connect,
                read=t.read,
                pool=t.pool,
                max_connections=max_connections,
            )
        self._http = http or httpx.Client(
            base_url=base_url,
            timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )
        self._key = key
        self.timeouts = t
        self.retry = retry or RetryPolicy()
        self.observers: list[Callable[[str, bool, str], None]] = []
        """Told of every call: (call, answered with a trusted reply, else why not)."""
        self._sleep, self._clock, self._random, self._now = sleep, clock, random, now

    def close(self) -> None:
        self._http.close()

    def longest_call(self) -> float:
        """Seconds one call can take at most by its timeouts (pool, connect, write, read):
        past that, no process is still waiting on its answer."""
        t = self.timeouts
        return t.pool + t.connect + t.write + t.read

    def __enter__(self) -> WalletClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the four calls -------------------------------------------------------------------

    def balance(self, player_token: str, currency: str) -> int:
        """The player's balance; raises :class:`WalletRefused` or :class:`WalletUnavailable`."""
        request = BalanceRequest(
            request_id=_request_id(),
            player_token=player_token,
            currency=currency,
            time=self._now(),
        )
        answer = self._exchange(Call.BALANCE, request)
        if isinstance(answer, _Failure):
            log.warning("wallet balance of %s failed: %s", player_token, answer.cause)
            raise WalletUnavailable(Call.BALANCE, answer.cause)
        if answer.error is not None:
            raise WalletRefused(Call.BALANCE, answer.error, answer.message)
        assert answer.balance is not None  # checked by _exchange
        return answer.balance

    def debit(self, transaction: Transaction) -> DebitResult:
        """One attempt, never retried (at most once). On ``unknown``, roll it back."""
        if transaction.call is not Call.DEBIT:
            raise ValueError(f"debit() takes a debit, not a {transaction.call}")
        answer = self._exchange(Call.DEBIT, transaction.request(_request_id(), self._now()))
        txn = transaction.transaction_id
        if isinstance(answer, _Failure):
            log.warning("wallet debit %s unknown: %s; it must be rolled back", txn, answer.cause)
            return DebitResult(DebitOutcome.UNKNOWN, transaction, cause=answer.cause)
        if answer.status is Status.OK:
            return DebitResult(DebitOutcome.ACCEPTED, transaction, answer.balance)
        error, balance = answer.error, answer.balance
        if answer.original is not None:  # a duplicate delivery: the first answer decides
            if answer.original.status is Status.OK:
                return DebitResult(DebitOutcome.ACCEPTED, transaction, answer.original.balance)
            error, balance = answer.original.error, answer.balance
        if error is ErrorCode.UNKNOWN_TRANSACTION:
            cause = f"answered {error} to a debit"
            log.warning("wallet debit %s unknown: %s; it must be rolled back", txn, cause)
            return DebitResult(DebitOutcome.UNKNOWN, transaction, cause=cause)
        cause = f"{error} {answer.message}".rstrip()
        log.info("wallet debit %s refused: %s", txn, cause)
        return DebitResult(DebitOutcome.REFUSED, transaction, balance, error, cause)

    def credit(self, transaction: Transaction) -> Delivery:
        """Deliver a credit until acknowledged (at least once), per :attr:`retry`."""
        if transaction.call is not Call.CREDIT:
            raise ValueError(f"credit() takes a credit, not a {transaction.call}")
        return self._deliver(transaction)

    def rollback(self, transaction: Transaction) -> Delivery:
        """Deliver a rollback (``Transaction.rollback(debit)``) until acknowledged."""
        if transaction.call is not Call.ROLLBACK:
            raise ValueError(f"rollback() takes a rollback, not a {transaction.call}")
        return self._deliver(transaction)

    def send(self, transaction: Transaction) -> Attempt:
        """One attempt at a credit or rollback (the outbox sender schedules the retries)."""
        if transaction.call not in (Call.CREDIT, Call.ROLLBACK):
            raise ValueError(f"send() takes a credit or a rollback, not a {transaction.call}")
        request = transaction.request(_request_id(), self._now())
        answer = self._exchange(transaction.call, request)
        if isinstance(answer, _Failure):
            return Attempt(AttemptKind.RETRY, answer.cause)
        if answer.status is Status.OK:
            return Attempt(AttemptKind.ACKNOWLEDGED, balance=answer.balance)
        error = answer.error
        assert error is not None
        if answer.original is not None:
            if answer.original.status is Status.OK:
                return Attempt(AttemptKind.ACKNOWLEDGED, str(error), answer.balance, error)
            error = answer.original.error or error
        if transaction.call is Call.ROLLBACK and error is ErrorCode.UNKNOWN_TRANSACTION:
            # The wallet has recorded the rollback: a late debit with that id is refused.
            return Attempt(AttemptKind.ACKNOWLEDGED, str(error), answer.balance, error)
        cause = f"{error} {answer.message}".rstrip()
        if error in _FINAL:
            return Attempt(AttemptKind.REJECTED, cause, answer.balance, error)
        return Attempt(AttemptKind.RETRY, cause, answer.balance, error)

    # -- one exchange ---------------------------------------------------------------------

    def _deliver(self, transaction: Transaction) -> Delivery:
        return deliver_until_acknowledged(
            lambda: self.send(transaction),
            label=f"{transaction.call} {transaction.transaction_id}",
            policy=self.retry,
            sleep=self._sleep,
            clock=self._clock,
            random=self._random,
        )

    def _exchange(self, call: Call, request: WalletRequest) -> WalletResponse | _Failure:
        """POST one signed request; a verified, consistent answer or the cause of failure
        (counted in ``croupier_wallet_calls`` by its outcome: ok, the wallet's error code,
        or why the answer was not had or not trusted)."""
        started = _time.perf_counter()
        answer = self._exchange_once(call, request)
        metrics.WALLET_LATENCY.labels(str(call)).observe(_time.perf_counter() - started)
        if isinstance(answer, _Failure):
            outcome = answer.outcome
        else:
            outcome = "ok" if answer.error is None else str(answer.error)
        metrics.WALLET_CALLS.labels(str(call), outcome).inc()
        cause = answer.cause if isinstance(answer, _Failure) else ""
        for observer in self.observers:
            observer(str(call), not isinstance(answer, _Failure), cause)
        return answer

    def _exchange_once(self, call: Call, request: WalletRequest) -> WalletResponse | _Failure:
        body = request.body()
        try:
            reply = self._http.post(
                f"/{call}",
                content=body,
                headers={
                    "content-type": "application/json",
                    signing.REQUEST_SIGNATURE: signing.sign(self._key, body),
                },
            )
        except httpx.TimeoutException as e:
            return _Failure(f"timeout ({type(e).__name__})", "timeout")
        except httpx.TransportError as e:
            return _Failure(f"transport error ({type(e).__name__}: {e})", "transport")
        if reply.status_code not in (200, 400, 401):
            return _Failure(f"HTTP {reply.status_code}", f"http-{reply.status_code // 100}xx")
        signature = reply.headers.get(signing.RESPONSE_SIGNATURE)
        if signature is None:
            return self._logged(request, "unsigned response")
        if not signing.verify(self._key, reply.content, signature):
            return self._logged(request, "bad response signature")
        try:
            answer = WalletResponse.model_validate_json(reply.content)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            return self._logged(request, f"malformed response ({where}: {first['msg']})")
        problem = _inconsistency(request, answer)
        if problem is not None:
            return self._logged(request, problem)
        return answer

    def _logged(self, request: WalletRequest, cause: str) -> _Failure:
        txn = getattr(request, "transaction_id", None)
        log.error(
            "wallet answer to %s (request %s) not trusted: %s", txn, request.request_id, cause
        )
        return _Failure(cause)


def _inconsistency(request: WalletRequest, answer: WalletResponse) -> str | None:
    """Why a signed, well-formed answer still cannot be believed (or None)."""
    if answer.request_id != request.request_id:
        return f"answer for another request ({answer.request_id})"
    if answer.balance is not None and answer.balance < 0:
        return f"negative balance ({answer.balance})"
    txn = getattr(request, "transaction_id", None)
    if txn is not None and answer.transaction_id != txn:
        return f"answer for another transaction ({answer.transaction_id})"
    accepting = answer.status is Status.OK or (
        answer.original is not None and answer.original.status is Status.OK
    )
    if not accepting:
        return None
    if answer.balance is None and not isinstance(request, RollbackRequest):
        # (a rollback of a debit refused for an unknown player has no balance to show)
        return "accepting answer without a balance"
    if answer.currency != request.currency:
        return f"answer in {answer.currency}, sent {request.currency}"
    amount = getattr(request, "amount", None)
    if amount is not None and answer.amount != amount:
        return f"answer for amount {answer.amount}, sent {amount}"
    return None


def _request_id() -> str:
    return uuid.uuid4().hex
