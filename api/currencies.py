"""``GET /v1/currencies``: the currencies an account may hold, with their minor units.

Every amount in the API is an integer of minor units; ``minor_unit`` says how many
decimal places that is (EUR 2, JPY 0, KWD 3), from the ISO 4217 list (:mod:`ledger.money`).
"""

from __future__ import annotations

import iso4217
from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from api import auth
from api.common import ERRORS
from ledger.money import currencies

router = APIRouter(
    prefix="/v1", tags=["game"], dependencies=[Depends(auth.any_caller)], responses=ERRORS
)


class CurrencyView(BaseModel):
    code: str
    minor_unit: int = Field(description="decimal places of the minor unit (EUR 2, JPY 0)")


class Currencies(BaseModel):
    source: str
    currencies: list[CurrencyView]


@router.get("/currencies", response_model=Currencies)
def list_currencies() -> Currencies:
    """Every ISO 4217 currency with a minor unit (those an account may be opened in)."""
    return Currencies(
        source=f"ISO 4217 list published {iso4217.__published__.isoformat()} (SIX)",
        currencies=[CurrencyView(code=c, minor_unit=e) for c, e in sorted(currencies().items())],
    )
