"""What a command answers: one frozen result type per command, and its wire form.

A handler builds its result from values it has just computed, so a result is a frozen
dataclass (no validation, no copy): reading it is reading attributes, and a field it does
not have is a type error. Its **wire form** (:meth:`Result.wire`, a JSON object) is what
the request record (:class:`ledger.requests.Request`) stores, once; a retried request is
answered with :meth:`Result.from_wire` of that record, so it answers exactly what the
first did, even from a record written by older code.

The wire form is persisted format: a field keeps its name for ever; a field added later
has a default, which is what a record written before it reads as (a retried old void
answers ``refunded=None``, as it did). Keys a type does not name are ignored when read
back (a seamless stake's record adds its wallet outcome to the round's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

Wire = dict[str, Any]
"""A result's wire form: a JSON object (str keys; str, int, bool, None, lists, objects)."""


@dataclass(frozen=True, kw_only=True)
class Result:
    """Base of every command's result (fields are keyword-only: read as written)."""

    _names: ClassVar[dict[type[Result], tuple[str, ...]]] = {}

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        names = Result._names.get(cls)
        if names is None:
            names = Result._names[cls] = tuple(f.name for f in dataclasses.fields(cls))
        return names

    def wire(self) -> Wire:
        """The JSON object the request record stores (and a retry is answered from)."""
        return {name: _plain(getattr(self, name)) for name in self._fields()}

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Self:
        """The result a request record stores, as its command's type reads it."""
        missing = [
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in wire
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"a recorded {cls.__name__} lacks {missing}: {dict(wire)!r}")
        return cls(**{name: wire[name] for name in cls._fields() if name in wire})


def _plain(value: Any) -> Any:
    """Tuples as lists, as the JSON record reads them back (a frozen result holds tuples)."""
    return list(value) if type(value) is tuple else value


# -- accounts and sessions (ledger.banking, ledger.sessions) -------------------------------


@dataclass(frozen=True, kw_only=True)
class AccountOpened(Result):
    player_id: str
    currency: str
    balance: int


@dataclass(frozen=True, kw_only=True)
class AccountMoved(Result):
    """A deposit or a withdrawal: the account's balance after it."""

    player_id: str
    balance: int


def wire_of(result: Result | Mapping[str, Any]) -> Wire:
    """What the request record stores of a handler's answer: a result's wire form (an
    answer still given as a JSON object, a live table's, is stored as it is)."""
    return result.wire() if isinstance(result, Result) else dict(result)
