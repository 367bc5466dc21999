"""Exact fractions as decimal figures for people: one rounding rule (half-even) everywhere."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction


def to_decimal(value: Fraction, places: int = 6) -> Decimal:
    """``value`` rounded half-even to ``places`` decimal places.

    >>> to_decimal(Fraction(2, 3), 4)
    Decimal('0.6667')
    """
    with localcontext() as ctx:
        ctx.prec = 60
        exact = Decimal(value.numerator) / Decimal(value.denominator)
        return exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


def as_percent(value: Fraction | float, places: int = 4) -> Decimal:
    """``value`` as a percentage rounded half-even (exact for fractions).

    >>> as_percent(Fraction(1653526326983, 1661102543100))
    Decimal('99.5439')
    """
    return to_decimal(Fraction(value) * 100, places)
