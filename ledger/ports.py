"""What the sealer and the read models need of the application, as a Protocol.

``ledger.checkpoints`` and ``ledger.projections`` are constructed by the Casino; typing
them against this port instead of the Casino class keeps ``ledger/`` free of import
cycles (the Casino imports them, they do not import the Casino).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import ApplicationRecorder, EventStore, Mapper

from ledger.keys import Keyring
from ledger.settings import Settings

A = TypeVar("A", bound=Aggregate)


class LogApp(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def keyring(self) -> Keyring: ...

    @property
    def recorder(self) -> ApplicationRecorder: ...

    @property
    def mapper(self) -> Mapper[UUID]: ...

    @property
    def events(self) -> EventStore[UUID]: ...

    key_history: Any
    readside: Any
    """The application's views (a ``ledger.readside.ReadSide``; typed loosely because the
    read side imports this port)."""
    """The log's key history (a ``ledger.trust.KeyHistory``; typed loosely because trust
    imports this port)."""

    def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

    def save(self, *objs: Any, **kwargs: Any) -> Any: ...
