"""Typed JSON errors: every failure is ``{"code", "message", ...ids}`` with its status.

Ledger errors keep their code, and their status is chosen here (``LEDGER_STATUS``: the
ledger knows no HTTP); game-rule errors are 422 (409 when the action exists but the
round's state does not offer it now: ``GAME_CONFLICTS``); request validation is 422
(400 for a missing ``Idempotency-Key``); anything unexpected is a bare 500 with no
detail. No handler ever returns a stack trace or echoes the request's input back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from games.blackjack import AlreadyDecided, NotAnOption
from games.errors import ActionOutOfPhase, GameRuleError
from games.video_poker.double_up import DoubleUpNotOffered, HalfDoubleTooSmall
from ledger import errors as le
from ledger.errors import Contention, LedgerError, StorageUnavailable, TamperDetected
from ledger.seamless import errors as seamless_errors
from ledger.seamless.port import StakeNotAuthorised
from ledger.tables import errors as te

log = logging.getLogger("croupier.api")

IDEMPOTENCY_HEADER = "Idempotency-Key"

# Path parameters named in error bodies, so a client can tell which id was refused.
_PATH_IDS = ("player_id", "session_id", "game_code")

_HTTP_CODES = {
    400: "bad-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "invalid-request",
}


# HTTP statuses of the ledger's errors: decided here, at the edge (the ledger knows none).
LEDGER_STATUS: dict[type[LedgerError], int] = {
    le.InvalidAmount: 422,
    le.InvalidRequest: 422,
    le.CurrencyMismatch: 422,
    le.InsufficientFunds: 409,
    le.AccountNotFound: 404,
    le.AccountExists: 409,
    le.SessionNotFound: 404,
    le.SessionClosed: 409,
    le.SessionBusy: 409,
    le.RoundNotFound: 404,
    le.RoundNotOpen: 409,
    le.DecisionNotForThisGame: 409,
    le.IdempotencyConflict: 409,
    le.Contention: 503,
    le.StorageUnavailable: 503,
    le.PositionNotReached: 409,
    le.AutoCompletionFailed: 500,
    # the table chat (ledger/chat.py)
    le.ChatMessageInvalid: 422,
    le.ChatMuted: 403,
    le.ChatBanned: 403,
    le.ChatRateLimited: 429,
    le.ChatMessageNotFound: 404,
    # the live blackjack tables (ledger/tables/errors.py)
    te.TableNotFound: 404,
    te.TableExists: 409,
    te.InvalidTableConfig: 422,
    te.UnknownBet: 422,
    te.BettingClosed: 409,
    te.StepClosed: 409,
    te.NotSeated: 409,
    te.SideBetWithoutMain: 409,
    te.NothingToUndo: 409,
    te.NothingToDouble: 409,
    te.RepeatNotAllowed: 409,
    te.TablePaused: 409,
    te.ChipLimitReached: 429,
    seamless_errors.WalletUnavailable: 503,
    seamless_errors.WalletRefused: 409,
    seamless_errors.StakeRolledBack: 409,
    seamless_errors.NoSeamlessWallet: 422,
    StakeNotAuthorised: 500,
}


# Game-rule errors are 422 (the request breaks a rule whatever the round's state), except
# these: the action exists but the round's state does not offer it now (409).
GAME_CONFLICTS: tuple[type[GameRuleError], ...] = (
    ActionOutOfPhase,
    DoubleUpNotOffered,
    HalfDoubleTooSmall,
    NotAnOption,
    AlreadyDecided,
)


def game_status(exc: GameRuleError) -> int:
    return 409 if isinstance(exc, GAME_CONFLICTS) else 422


def ledger_status(exc: LedgerError) -> int:
    for cls in type(exc).__mro__:
        if cls in LEDGER_STATUS:
            return LEDGER_STATUS[cls]
    return 400


class ApiError(Exception):
    """An error raised by the HTTP layer itself (authentication, lookups, bad ranges)."""

    def __init__(self, status: int, code: str, message: str, **ids: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.ids = {k: str(v) for k, v in ids.items() if v is not None}


def error_body(
    request: Request, code: str, message: str, ids: dict[str, str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for name in _PATH_IDS:
        if name in request.path_params:
            body[name] = str(request.path_params[name])
    for key, value in (ids or {}).items():
        # The ledger names a round's game code ``code``, which would hide the error code.
        body["game_code" if key == "code" else key] = value
    body["code"] = code
    body["message"] = message
    return body


def _json(
    status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _json(exc.status, error_body(request, exc.code, exc.message, exc.ids), headers)

    @app.exception_handler(LedgerError)
    async def ledger_error(request: Request, exc: LedgerError) -> JSONResponse:
        retry = isinstance(exc, Contention | StorageUnavailable)
        headers = {"Retry-After": "1"} if retry else None
        if isinstance(exc, le.ChatRateLimited | te.ChipLimitReached):
            headers = {"Retry-After": str(exc.retry_after)}
        body = error_body(request, exc.code, exc.message, exc.ids)
        return _json(ledger_status(exc), body, headers)

    @app.exception_handler(GameRuleError)
    async def game_rule_error(request: Request, exc: GameRuleError) -> JSONResponse:
        return _json(game_status(exc), error_body(request, exc.code, exc.message))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        raw = exc.errors()
        errors = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in raw
        ]
        if any(
            e["loc"][:2] == ["header", IDEMPOTENCY_HEADER] and r.get("type") == "missing"
            for e, r in zip(errors, raw, strict=True)
        ):
            body = error_body(
                request,
                "idempotency-key-required",
                f"mutating requests need an {IDEMPOTENCY_HEADER} header",
            )
            return _json(400, body)
        summary = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors[:5])
        body = error_body(request, "invalid-request", summary or "invalid request")
        body["errors"] = errors
        return _json(422, body)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http-error")
        message = exc.detail if isinstance(exc.detail, str) else code
        return _json(exc.status_code, error_body(request, code, message), exc.headers)

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def store_down(request: Request, exc: Exception) -> JSONResponse:
        # A read that found no connection to the store (commands say so themselves:
        # StorageUnavailable): named, and retryable, never a bare 500.
        log.error("store unavailable on %s %s: %s", request.method, request.url.path, exc)
        message = "the store did not answer; nothing was written, retry later"
        body = error_body(request, StorageUnavailable.code, message)
        return _json(503, body, {"Retry-After": "1"})

    @app.exception_handler(TamperDetected)
    async def tamper(request: Request, exc: TamperDetected) -> JSONResponse:
        # The stored log failed verification on read: refuse to serve it, name no detail.
        log.error("tamper detected on %s %s: %s", request.method, request.url.path, exc)
        body = error_body(request, "tamper-detected", "the stored log failed verification")
        return _json(500, body)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _json(500, {"code": "internal-error", "message": "internal server error"})
