"""Significant events: each one a small signed aggregate of its own in the log.

What a regulator calls significant (GLI-19's significant events) and the log did not hold
as an event of its own: a server starting and stopping, the sealer refusing a row (a key
or a row it cannot vouch for), the operator's verification run and what it found, an
operator's wallet becoming unavailable and available again. The rest is in the log
already as the events of what happened: key rotations (``croupier/trust/rotated``), table
configuration and limit changes, pauses and resumes, voids with their reason and incident
(a malfunction is a void's reason). ``audit-cli events`` lists both kinds
(:mod:`audit_cli.events`).

One aggregate per event (a fresh id, version 1), so recording one never collides with
anything else being written.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.contracts import SignificantKind

log = logging.getLogger("croupier")


class Saves(Protocol):
    def save(self, *objs: Any, **kwargs: Any) -> Any: ...


class SignificantEvent(Aggregate):
    TOPIC = contracts.SIGNIFICANT

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.SIGNIFICANT_CREATED

    @staticmethod
    def create_id(nonce: str) -> UUID:
        return UUID(nonce)

    @event("Recorded", topic=contracts.SIGNIFICANT_RECORDED)
    def __init__(self, nonce: str, kind: str, at: str, detail: dict[str, Any]) -> None:
        self.kind = kind
        self.at = at
        self.detail = dict(detail)


def record(app: Saves, kind: SignificantKind, **detail: Any) -> None:
    """Append one significant event (``detail``: JSON values, never a secret)."""
    at = datetime.now(UTC).isoformat(timespec="milliseconds")
    app.save(SignificantEvent(str(uuid4()), str(kind), at, detail))


def server_event(app: Saves, kind: SignificantKind, cell: str | None = None) -> None:
    """A server process starting or stopping on this log (``croupier serve``; one per
    worker process), named by its process id and host. A store that cannot take it (it
    is down) is logged, never raised: stopping must go on."""
    detail: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname()}
    if cell is not None:
        detail["cell"] = cell
    try:
        record(app, kind, **detail)
    except Exception as e:
        log.error("%s not recorded in the log: %s", kind, e)


class WalletWatch:
    """Records an operator's wallet becoming unavailable (a call got no trusted answer)
    and available again (the next call that did): the transitions, never every call."""

    def __init__(self, app: Saves, operator: str) -> None:
        self.app = app
        self.operator = operator
        self.up: bool | None = None
        self._lock = threading.Lock()

    def saw(self, call: str, answered: bool, cause: str) -> None:
        with self._lock:
            if self.up is answered or (self.up is None and answered):
                self.up = answered
                return
            self.up = answered
        kind = SignificantKind.WALLET_AVAILABLE if answered else SignificantKind.WALLET_UNAVAILABLE
        detail: Mapping[str, Any] = {"operator": self.operator, "call": call}
        record(self.app, kind, **detail, **({} if answered else {"cause": cause}))
