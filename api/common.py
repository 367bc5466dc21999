"""What every route shares: the application, the ``Idempotency-Key`` header, error docs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from uuid import UUID

from fastapi import Header, Request

from api.errors import IDEMPOTENCY_HEADER
from api.schemas import ErrorBody
from games.errors import GameRuleError
from ledger.casino import Casino
from ledger.errors import IdempotencyConflict, LedgerError
from ledger.requests import MAX_REQUEST_ID

R = TypeVar("R")

IdempotencyKey = Annotated[
    str,
    Header(
        alias=IDEMPOTENCY_HEADER,
        min_length=1,
        max_length=MAX_REQUEST_ID,
        pattern=r"^[\x21-\x7e]+$",
        description="client-chosen id of this request (printable ASCII, no spaces): a repeat "
        "returns the original response and changes nothing; the same key with a different "
        "request is refused with 409",
    ),
]

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (400, "malformed request (e.g. no Idempotency-Key)"),
        (401, "no or unknown bearer token"),
        (403, "the credential may not do this"),
        (404, "no such account, session, round or checkpoint"),
        (409, "conflicts with the current state, or Idempotency-Key reused for another request"),
        (422, "invalid input or a game rule refused it"),
        (503, "too much contention; safe to retry with the same Idempotency-Key"),
    )
}


async def casino(request: Request) -> Casino:
    app: Casino = request.app.state.casino
    return app


def canonical_session_id(session_id: str) -> str:
    """One spelling per session (ids are compared and hashed as text downstream)."""
    return str(UUID(session_id))


def once(command: Callable[[], R]) -> R:
    """Run one ledger command; if it is refused, ask once more before answering.

    The ledger checks a request id before running the command, so a duplicate that
    arrives while the original is still in flight runs too, and is then refused by the
    very state the original created (e.g. ``session-busy`` for a second copy of a deal).
    Asking again finds the original's record and returns its result, as a repeat should.
    A refusal that is real is simply refused again (nothing was written either time).
    """
    try:
        return command()
    except IdempotencyConflict:
        raise
    except (LedgerError, GameRuleError):
        return command()
