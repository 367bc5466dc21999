"""Fault injection for the simulated wallet: what goes wrong with the next calls.

A :class:`FaultPlan` is set at start (``croupier wallet-sim --error-rate ...``) or through
``POST /admin/faults``. ``script`` lists faults for the next calls in order (deterministic,
for tests); once it is used up, each call draws from ``rates`` with the plan's seed.
"""

from __future__ import annotations

import random
import threading
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from wallet.protocol import Call


class Fault(StrEnum):
    ERROR_5XX = "5xx"  # HTTP 500, nothing applied
    TIMEOUT_BEFORE = "timeout-before"  # hold the request past the client's timeout, then 504
    TIMEOUT_AFTER = "timeout-after"  # apply, then hold the answer past the timeout (lost)
    LATE = "late"  # hold past the timeout, then apply (arrives after the client gave up)
    DUPLICATE = "duplicate"  # the request is delivered twice; the second answer is sent
    BAD_JSON = "bad-json"  # apply, answer a signed body that is not JSON
    BAD_SIGNATURE = "bad-signature"  # apply, answer with a wrong signature
    UNSIGNED = "unsigned"  # apply, answer without a signature
    OTHER_CURRENCY = "other-currency"  # apply, answer (signed) in another currency
    OTHER_AMOUNT = "other-amount"  # apply, answer (signed) with another amount
    NEGATIVE_BALANCE = "negative-balance"  # apply, answer (signed) a negative balance


class FaultPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    latency_ms: int = Field(default=0, ge=0)  # added to every wallet call
    hang_ms: int = Field(default=2000, ge=0)  # how long a timeout fault holds the request
    rates: dict[Fault, float] = Field(default_factory=dict)
    script: list[Fault | None] = Field(default_factory=list)  # None: this call goes well
    calls: list[Call] = Field(default_factory=lambda: [c for c in Call])
    seed: int = 0


class Faults:
    """The plan in force and its random stream; thread-safe."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        self._lock = threading.Lock()
        self.set(plan or FaultPlan())

    def set(self, plan: FaultPlan) -> None:
        if sum(plan.rates.values()) > 1 or any(r < 0 for r in plan.rates.values()):
            raise ValueError("fault rates are probabilities summing to at most 1")
        with self._lock:
            self.plan = plan
            self._script = list(plan.script)
            self._random = random.Random(plan.seed)

    def next(self, call: Call) -> Fault | None:
        """The fault for this call (or None)."""
        with self._lock:
            if call not in self.plan.calls:
                return None
            if self._script:
                return self._script.pop(0)
            draw = self._random.random()
            for fault, rate in self.plan.rates.items():
                if draw < rate:
                    return fault
                draw -= rate
            return None
