"""The application's handlers: one per command type, registered once.

A handler of a command ``C`` whose result type is ``R`` (``C`` is a ``Command[R]``) is a
:data:`~ledger.commands.Handler` ``[C, R]``: it takes the attempt's
:class:`~ledger.unit_of_work.UnitOfWork` and the command, changes aggregates through the
unit of work and returns the frozen ``R``. :func:`ledger.bootstrap.bootstrap` registers
each with ``C.handled_by(handler)`` (:meth:`ledger.commands.Command.handled_by`), which
mypy checks both ways: the handler takes that command and answers its result type.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ledger.commands import Command, Handler, Route

AnyHandler = Handler[Any, Any]


class Handlers(Mapping[type[Command[Any]], AnyHandler]):
    """The handler of each command type; a second one for a type is refused."""

    def __init__(self) -> None:
        self._by_type: dict[type[Command[Any]], AnyHandler] = {}

    def add(self, *routes: Route[Any, Any]) -> None:
        for route in routes:
            if route.command in self._by_type:
                raise ValueError(f"{route.command.__name__} already has a handler")
            self._by_type[route.command] = route.handler

    def __getitem__(self, kind: type[Command[Any]]) -> AnyHandler:
        return self._by_type[kind]

    def __iter__(self) -> Iterator[type[Command[Any]]]:
        return iter(self._by_type)

    def __len__(self) -> int:
        return len(self._by_type)
