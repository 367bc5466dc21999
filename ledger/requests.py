"""Idempotency: one small aggregate per client request id, saved with the command's effects.

The same request id with the same body returns the recorded result and moves nothing; with
a different body it is refused. Because the record is an event saved in the same
transaction as the money movement, this holds across restarts and between processes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.errors import InvalidRequest
from ledger.ids import uuid5
from ledger.money import CURRENT_REQUEST, MovementRequest
from ledger.results import Wire

MAX_REQUEST_ID = 200
T = TypeVar("T")

# The request a command runs for: every money movement it makes names it (id of the
# request record, body digest, and its number within the command: 1, 2, ...), so an
# auditor can check that each movement's request record exists with the same digest and
# that no request moved money twice (a deleted record would let a retry pay again).


def for_request(rid: UUID, digest: str, action: Callable[[], T]) -> Callable[[], T]:
    """``action`` run with its request named in every movement it makes."""

    def bound() -> T:
        token = CURRENT_REQUEST.set(MovementRequest(str(rid), digest))
        try:
            return action()
        finally:
            CURRENT_REQUEST.reset(token)

    return bound


def request_aggregate_id(scope: str, request_id: str) -> UUID:
    return uuid5(NAMESPACE, f"request:{scope}:{request_id}")


def check_request_id(request_id: object) -> str:
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
        raise InvalidRequest(
            f"request id must be a non-empty string of at most {MAX_REQUEST_ID} characters"
        )
    return request_id


def body_digest(command: str, body: dict[str, Any]) -> str:
    canonical = json.dumps({"command": command, "body": body}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class Request(Aggregate):
    TOPIC = contracts.REQUEST

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.REQUEST_CREATED

    @staticmethod
    def create_id(scope: str, request_id: str) -> UUID:
        return request_aggregate_id(scope, request_id)

    @event("Accepted", topic=contracts.REQUEST_ACCEPTED)
    def __init__(
        self, scope: str, request_id: str, command: str, digest: str, result: Wire
    ) -> None:
        """``result``: the wire form of the command's result (:mod:`ledger.results`)."""
        self.scope = scope
        self.request_id = request_id
        self.command = command
        self.digest = digest
        self.result = dict(result)
