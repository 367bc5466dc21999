"""What every route shares: the application, the ``Idempotency-Key`` header, error docs."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import Header, Request

from api.errors import IDEMPOTENCY_HEADER
from api.schemas import ErrorBody
from ledger.casino import Casino
from ledger.requests import MAX_REQUEST_ID

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
        (413, "the request body is larger than the configured limit"),
        (422, "invalid input or a game rule refused it"),
        (429, "rate limit of this address or credential reached; see Retry-After"),
        (503, "too much contention; safe to retry with the same Idempotency-Key"),
    )
}


async def casino(request: Request) -> Casino:
    app: Casino = request.app.state.casino
    return app


def canonical_session_id(session_id: str) -> str:
    """One spelling per session (ids are compared and hashed as text downstream)."""
    return str(UUID(session_id))
