"""Where a session's table connection is held, across every worker and host on one store.

seed 002 "Disconnessione" counts a seat disconnected when its player is gone, not when one
of its connections is: a player may have a stream on one worker and a socket on another
(issue 28 item 5). So the connection's presence is in the log, where every process sees
it, and the decision is taken in the command that records it:

- :class:`TablePresence`, one per (session, table): which server processes (``worker``,
  an id each process draws at start) hold a connection of the session to the table now.
  A process records ``Held`` when its first connection opens (:class:`HoldTable`, which
  also marks the seat connected, as ``Connect`` does) and ``Released`` when its last one
  has been gone for the grace (:class:`ReleaseTable`). The release disconnects the seat
  (as ``Disconnect`` does: before the betting deadline its bets are refunded) only if no
  other live process holds it, in the same unit of work: two processes releasing and
  holding at once write the same aggregate, so one of them is re-run on the other's
  state (the store's version check), and no interleaving disconnects a held seat or
  leaves a released one connected.
- :class:`PresenceWorker`, one per process: its beat (:class:`WorkerBeat`, every
  :data:`BEAT_SECONDS` while it holds anything). A holder whose last beat (or hold) is
  older than :data:`LEASE_SECONDS` counts as gone (a killed process never releases), and
  any process releases its holds (``api.table_connections`` reaps them).

Times are the processes' clocks (UTC, ISO 8601): hosts on one database keep them in step
(NTP); a skew well under the lease changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.commands import Command
from ledger.tables import commands as tc
from ledger.unit_of_work import UnitOfWork

BEAT_SECONDS = 5.0
"""How often a process that holds connections records its beat."""
LEASE_SECONDS = 30.0
"""A holder silent this long (no beat, no hold) counts as gone: its process was killed."""


def presence_id_for(session_id: str, table: str) -> UUID:
    return uuid5(NAMESPACE, f"table-presence:{session_id}:{table}")


def worker_id_for(worker: str) -> UUID:
    return uuid5(NAMESPACE, f"presence-worker:{worker}")


class TablePresence(Aggregate):
    TOPIC = contracts.TABLE_PRESENCE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_PRESENCE_CREATED

    @staticmethod
    def create_id(session_id: str, table: str, worker: str, at: str) -> UUID:
        return presence_id_for(session_id, table)

    @event("Opened", topic=contracts.TABLE_PRESENCE_OPENED)
    def __init__(self, session_id: str, table: str, worker: str, at: str) -> None:
        self.session_id = session_id
        self.table = table
        self.holders: dict[str, str] = {worker: at}
        """Process id -> when it took hold."""

    @event("Held", topic=contracts.TABLE_PRESENCE_HELD)
    def held(self, session_id: str, table: str, worker: str, at: str) -> None:
        self.holders[worker] = at

    @event("Released", topic=contracts.TABLE_PRESENCE_RELEASED)
    def released(self, session_id: str, table: str, worker: str, at: str) -> None:
        self.holders.pop(worker, None)


class PresenceWorker(Aggregate):
    TOPIC = contracts.PRESENCE_WORKER

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.PRESENCE_WORKER_CREATED

    @staticmethod
    def create_id(worker: str, at: str) -> UUID:
        return worker_id_for(worker)

    @event("Started", topic=contracts.PRESENCE_WORKER_STARTED)
    def __init__(self, worker: str, at: str) -> None:
        self.worker = worker
        self.beat = at

    @event("Beat", topic=contracts.PRESENCE_WORKER_BEAT)
    def beat_at(self, worker: str, at: str) -> None:
        self.beat = at


@dataclass(frozen=True)
class HoldTable(tc.TableCommand):
    """A process has a connection of the session to the table (its first)."""

    name: ClassVar[str] = "blackjack_presence_hold"
    worker: str
    at: str


@dataclass(frozen=True)
class ReleaseTable(tc.TableCommand):
    """A process's connections of the session to the table have been gone for the grace
    (or the process is gone: released by another, :data:`LEASE_SECONDS` after)."""

    name: ClassVar[str] = "blackjack_presence_release"
    worker: str
    at: str


@dataclass(frozen=True)
class WorkerBeat(Command):
    name: ClassVar[str] = "presence_worker_beat"
    worker: str
    at: str

    @property
    def scope(self) -> str:
        return f"presence-worker:{self.worker}"


def alive(uow: UnitOfWork, worker: str, since: str, now: str) -> bool:
    """Whether ``worker`` (holding since ``since``) counts as present at ``now``."""
    record = uow.get(PresenceWorker, worker_id_for(worker))
    return fresh(since if record is None else max(since, record.beat), now)


def fresh(last: str, now: str) -> bool:
    """Whether a holder last heard of at ``last`` counts as present at ``now``."""
    return _at(now) - _at(last) <= timedelta(seconds=LEASE_SECONDS)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


class Presence:
    """The handlers, over the tables' ``Connect`` and ``Disconnect`` (the seat's rule).
    Their answers say where the session is held (the seat's own is the stream's)."""

    def __init__(
        self,
        connect: Callable[[UnitOfWork, tc.Connect], object],
        disconnect: Callable[[UnitOfWork, tc.Disconnect], object],
    ) -> None:
        self.connect = connect
        self.disconnect = disconnect

    def hold(self, uow: UnitOfWork, cmd: HoldTable) -> dict[str, Any]:
        record = uow.get(TablePresence, presence_id_for(cmd.session_id, cmd.table))
        if record is None:
            uow.add(TablePresence(cmd.session_id, cmd.table, cmd.worker, cmd.at))
        elif cmd.worker not in record.holders:
            record.held(session_id=cmd.session_id, table=cmd.table, worker=cmd.worker, at=cmd.at)
        self.connect(uow, tc.Connect(cmd.session_id, cmd.table))
        return {"held_by": len(record.holders) if record is not None else 1}

    def release(self, uow: UnitOfWork, cmd: ReleaseTable) -> dict[str, Any]:
        record = uow.get(TablePresence, presence_id_for(cmd.session_id, cmd.table))
        if record is None:
            self.disconnect(uow, tc.Disconnect(cmd.session_id, cmd.table))
            return {"held_by": 0}
        if cmd.worker in record.holders:
            record.released(
                session_id=cmd.session_id, table=cmd.table, worker=cmd.worker, at=cmd.at
            )
        held = [w for w, since in record.holders.items() if alive(uow, w, since, cmd.at)]
        if held:  # another process still has a connection of this session here
            return {"held_by": len(held)}
        self.disconnect(uow, tc.Disconnect(cmd.session_id, cmd.table))
        return {"held_by": 0}

    def beat(self, uow: UnitOfWork, cmd: WorkerBeat) -> dict[str, Any]:
        record = uow.get(PresenceWorker, worker_id_for(cmd.worker))
        if record is None:
            uow.add(PresenceWorker(cmd.worker, cmd.at))
        else:
            record.beat_at(worker=cmd.worker, at=cmd.at)
        return {"worker": cmd.worker, "at": cmd.at}
