"""At-least-once delivery: retried with growing, capped, jittered delays until acknowledged;
a rejection stops it; a bounded run leaves it pending. Driven by a fake clock."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from wallet import signing
from wallet.client import DebitOutcome, WalletClient
from wallet.delivery import (
    Attempt,
    AttemptKind,
    DeliveryState,
    RetryPolicy,
    deliver_until_acknowledged,
)
from wallet.protocol import Transaction

KEY = b"k"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


class Script:
    """A fake call: answers the given attempts in order."""

    def __init__(self, *kinds: AttemptKind) -> None:
        self.kinds = list(kinds)
        self.calls = 0

    def __call__(self) -> Attempt:
        self.calls += 1
        return Attempt(self.kinds.pop(0), cause=f"attempt {self.calls}")


def deliver(script: Script, policy: RetryPolicy, clock: FakeClock, jitter: float = 1.0):  # type: ignore[no-untyped-def]
    return deliver_until_acknowledged(
        script,
        label="credit t-1",
        policy=policy,
        sleep=clock.sleep,
        clock=clock,
        random=lambda: jitter,
    )


def test_a_call_is_retried_until_acknowledged_with_growing_delays() -> None:
    clock = FakeClock()
    script = Script(*[AttemptKind.RETRY] * 4, AttemptKind.ACKNOWLEDGED)
    delivery = deliver(script, RetryPolicy(first_delay=0.1, factor=2, max_delay=10), clock, 0.999)
    assert delivery.state is DeliveryState.ACKNOWLEDGED
    assert delivery.attempts == script.calls == 5
    assert clock.sleeps == pytest.approx([0.1, 0.2, 0.4, 0.8], rel=1e-3)


def test_the_delay_is_capped_and_jitter_keeps_at_least_half_of_it() -> None:
    policy = RetryPolicy(first_delay=1, factor=3, max_delay=5)
    assert policy.delay(10, lambda: 0.999999) == pytest.approx(5)
    assert policy.delay(10, lambda: 0.0) == pytest.approx(2.5)
    assert policy.delay(1, lambda: 0.0) == pytest.approx(0.5)


def test_a_rejection_stops_the_retries(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    script = Script(AttemptKind.RETRY, AttemptKind.REJECTED, AttemptKind.ACKNOWLEDGED)
    with caplog.at_level(logging.WARNING, "croupier.wallet"):
        delivery = deliver(script, RetryPolicy(), clock)
    assert delivery.state is DeliveryState.REJECTED and script.calls == 2
    assert "credit t-1 rejected: attempt 2" in caplog.text


def test_a_bounded_run_leaves_the_call_pending() -> None:
    clock = FakeClock()
    script = Script(*[AttemptKind.RETRY] * 10)
    delivery = deliver(script, RetryPolicy(max_attempts=3), clock)
    assert delivery.state is DeliveryState.PENDING and script.calls == 3
    assert len(clock.sleeps) == 2


def test_a_run_bounded_in_time_stops_before_sleeping_past_it() -> None:
    clock = FakeClock()
    script = Script(*[AttemptKind.RETRY] * 100)
    policy = RetryPolicy(first_delay=1, factor=2, max_delay=60, give_up_after=20)
    delivery = deliver(script, policy, clock)
    assert delivery.state is DeliveryState.PENDING
    assert clock.now <= 20 and script.calls == 5  # slept 1 + 2 + 4 + 8; the next 16 overruns


@pytest.mark.parametrize(
    "bad",
    [
        dict(first_delay=-1),
        dict(factor=0.5),
        dict(first_delay=5, max_delay=1),
        dict(max_attempts=0),
    ],
)
def test_a_policy_that_is_not_a_backoff_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


class RecordingWallet:
    """A fake wallet behind httpx's transport: answers 503 ``failures`` times, then a signed
    acceptance; records every body it received."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if len(self.bodies) <= self.failures:
            return httpx.Response(503)
        answer = {
            "status": "ok",
            "request_id": body["request_id"],
            "transaction_id": body["transaction_id"],
            "amount": body["amount"],
            "balance": 1000,
            "currency": body["currency"],
        }
        raw = json.dumps(answer).encode()
        return httpx.Response(
            200, content=raw, headers={signing.RESPONSE_SIGNATURE: signing.sign(KEY, raw)}
        )


def client_for(wallet: RecordingWallet, clock: FakeClock) -> WalletClient:
    http = httpx.Client(base_url="http://wallet", transport=httpx.MockTransport(wallet))
    return WalletClient("http://wallet", KEY, http=http, sleep=clock.sleep, clock=clock)


def test_a_retried_credit_reuses_its_transaction_id_with_fresh_request_ids() -> None:
    wallet, clock = RecordingWallet(failures=3), FakeClock()
    delivery = client_for(wallet, clock).credit(Transaction.credit("p", "VP-1", 250, "EUR"))
    assert delivery.state is DeliveryState.ACKNOWLEDGED and delivery.attempts == 4
    assert len({b["transaction_id"] for b in wallet.bodies}) == 1
    assert len({b["request_id"] for b in wallet.bodies}) == 4
    assert len(clock.sleeps) == 3


def test_a_debit_is_sent_once_even_when_the_answer_is_a_5xx() -> None:
    wallet, clock = RecordingWallet(failures=5), FakeClock()
    result = client_for(wallet, clock).debit(Transaction.debit("p", "RD-1", "main", 100, "EUR"))
    assert result.outcome is DebitOutcome.UNKNOWN and result.cause == "HTTP 503"
    assert len(wallet.bodies) == 1 and clock.sleeps == []
