"""At-least-once delivery: send one call again and again, with bounded exponential backoff
and jitter, until the wallet acknowledges it (or refuses it for good).

Pure of I/O: the attempt, the sleep, the clock and the randomness are passed in, so the
outbox sender of the ledger (and the tests) drive it with their own.
"""

from __future__ import annotations

import logging
import random as _random
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from wallet.protocol import ErrorCode

log = logging.getLogger("croupier.wallet")


class AttemptKind(StrEnum):
    ACKNOWLEDGED = "acknowledged"  # the wallet has it (applied now, before, or remembered)
    RETRY = "retry"  # no trustworthy answer (timeout, 5xx, bad answer): send it again
    REJECTED = "rejected"  # a signed refusal that the same body will always get


@dataclass(frozen=True)
class Attempt:
    """The outcome of one delivery attempt."""

    kind: AttemptKind
    cause: str | None = None  # why it was not acknowledged (or what was noteworthy)
    balance: int | None = None  # the wallet's balance after the call, when it answered
    error: ErrorCode | None = None


class DeliveryState(StrEnum):
    ACKNOWLEDGED = "acknowledged"
    REJECTED = "rejected"  # needs a person: reconciliation lists it
    PENDING = "pending"  # the policy's attempts or time ran out; deliver again later


@dataclass(frozen=True)
class Delivery:
    state: DeliveryState
    attempts: int
    last: Attempt


@dataclass(frozen=True)
class RetryPolicy:
    """Delay before retry n (n = 1, 2, ...): ``min(max_delay, first_delay * factor**(n-1))``
    scaled by a random factor in [0.5, 1) ("equal jitter": callers that failed together do
    not retry together, and the delay still grows). ``max_attempts`` / ``give_up_after``
    (seconds) bound one run; ``None`` means keep going until acknowledged."""

    first_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 30.0
    max_attempts: int | None = None
    give_up_after: float | None = None

    def __post_init__(self) -> None:
        if self.first_delay < 0 or self.factor < 1 or self.max_delay < self.first_delay:
            raise ValueError(f"not a backoff: {self}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay(self, retry: int, random: Callable[[], float]) -> float:
        ceiling = min(self.max_delay, self.first_delay * self.factor ** (retry - 1))
        return ceiling * (0.5 + 0.5 * random())


def deliver_until_acknowledged(
    call: Callable[[], Attempt],
    *,
    label: str,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = _time.sleep,
    clock: Callable[[], float] = _time.monotonic,
    random: Callable[[], float] = _random.random,
) -> Delivery:
    """Run ``call`` until it is acknowledged or rejected, or the policy's bound is reached.

    ``label`` names the call in log lines (the transaction id). ``call`` must send the same
    transaction every time (same transaction id), which is what makes retrying safe.
    """
    started = clock()
    attempts = 0
    while True:
        attempts += 1
        attempt = call()
        if attempt.kind is AttemptKind.ACKNOWLEDGED:
            if attempts > 1:
                log.info("wallet %s acknowledged after %d attempts", label, attempts)
            return Delivery(DeliveryState.ACKNOWLEDGED, attempts, attempt)
        if attempt.kind is AttemptKind.REJECTED:
            log.error("wallet %s rejected: %s; not retried", label, attempt.cause)
            return Delivery(DeliveryState.REJECTED, attempts, attempt)
        wait = policy.delay(attempts, random)
        out_of_attempts = policy.max_attempts is not None and attempts >= policy.max_attempts
        out_of_time = (
            policy.give_up_after is not None and clock() + wait - started > policy.give_up_after
        )
        if out_of_attempts or out_of_time:
            log.warning(
                "wallet %s still pending after %d attempts: %s", label, attempts, attempt.cause
            )
            return Delivery(DeliveryState.PENDING, attempts, attempt)
        log.warning(
            "wallet %s attempt %d failed: %s; retry in %.3f s", label, attempts, attempt.cause, wait
        )
        sleep(wait)
