"""Money is an int of minor units; movements are double-entry between named ledgers."""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any
from uuid import UUID

import iso4217

from ledger.errors import InvalidAmount, InvalidRequest


@dataclass
class MovementRequest:
    """The request a command runs for: its record id and body digest, and how many
    movements the command has made so far (each names the request with its number)."""

    id: str
    digest: str
    made: int = 0

    def name_next(self) -> dict[str, Any]:
        """The next movement's ``request``: the record id, the digest and its number."""
        self.made += 1
        return {"id": self.id, "digest": self.digest, "seq": self.made}


CURRENT_REQUEST: ContextVar[MovementRequest | None] = ContextVar("croupier_request", default=None)
"""The request the running command is for, set by ``ledger.requests.for_request`` around
its handler: every movement names it, so verify can cross-check it."""

_CURRENCY = re.compile(r"^[A-Z]{3}$")


def check_amount(amount: object, what: str = "amount") -> int:
    """A positive int of minor units; bools, floats and strings are refused."""
    if type(amount) is not int:
        raise InvalidAmount(f"{what} must be an integer number of minor units, got {amount!r}")
    if amount <= 0:
        raise InvalidAmount(f"{what} must be positive, got {amount}")
    return amount


def check_currency(currency: object) -> str:
    """An active ISO 4217 code of a currency with minor units (so amounts in minor units
    mean something): 'EUR', 'JPY' (0 decimals), 'KWD' (3). Codes without a minor unit
    (gold 'XAU', the SDR 'XDR', ...) are refused."""
    if not isinstance(currency, str) or not _CURRENCY.match(currency):
        raise InvalidRequest(f"currency must be an ISO 4217 code such as 'EUR', got {currency!r}")
    if currency not in currencies():
        raise InvalidRequest(
            f"{currency!r} is not an ISO 4217 currency with a minor unit", currency=currency
        )
    return currency


@cache
def currencies() -> dict[str, int]:
    """Every ISO 4217 currency with a minor unit, with its exponent (decimal places of its
    minor unit): the ISO 4217 list one, as published by SIX and bundled by ``iso4217``."""
    return {c.code: int(c.exponent) for c in iso4217.Currency if c.exponent is not None}


def minor_unit(currency: str) -> int:
    """The exponent of the currency's minor unit: 2 for EUR (cents), 0 for JPY."""
    return currencies()[check_currency(currency)]


def account_ledger(account_id: UUID) -> str:
    return f"account:{account_id}"


def session_ledger(session_id: UUID) -> str:
    return f"session:{session_id}"


def bank_ledger(currency: str) -> str:
    """Outside the casino: where deposits come from and withdrawals go."""
    return f"bank:{currency}"


def house_ledger(currency: str) -> str:
    """The game provider's side of every stake and win."""
    return f"house:{currency}"


def movement(source: str, destination: str, amount: int, currency: str) -> dict[str, Any]:
    """The wire form of one double-entry movement, carried by exactly one event; it names
    the request of the command that made it (record id, body digest, number within it)."""
    mv: dict[str, Any] = {
        "source": source,
        "destination": destination,
        "amount": amount,
        "currency": currency,
    }
    request = CURRENT_REQUEST.get()
    if request is not None:
        mv["request"] = request.name_next()
    return mv
