"""The simulated wallet's HTTP app: the four protocol calls, signature checks, fault
injection, and signed admin calls to seed players, read balances and set faults.

Wallet endpoints are ``async`` so injected latency (``asyncio.sleep``) overlaps across
concurrent callers instead of holding a worker thread; the SQLite work itself is short
and runs inline (it is serialised by the books' lock anyway).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from wallet import signing
from wallet.protocol import (
    REQUESTS,
    BalanceRequest,
    Call,
    ErrorCode,
    Status,
    TransactionRequest,
    WalletResponse,
)
from wallet.sim.faults import Fault, FaultPlan, Faults
from wallet.sim.store import WalletBooks

_CORRUPT = frozenset(
    {
        Fault.BAD_JSON,
        Fault.BAD_SIGNATURE,
        Fault.UNSIGNED,
        Fault.OTHER_CURRENCY,
        Fault.OTHER_AMOUNT,
        Fault.NEGATIVE_BALANCE,
    }
)


class PlayerSeed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str
    currency: str
    balance: int


class PlayersBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    players: list[PlayerSeed]


class TokensBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tokens: list[str]


def create_wallet_app(books: WalletBooks, key: bytes, faults: Faults | None = None) -> FastAPI:
    """The wallet at ``/{call}`` and its admin calls at ``/admin/...`` (all signed)."""
    faults = faults or Faults()
    app = FastAPI(title="croupier wallet-sim", description=__doc__)
    app.state.books, app.state.faults = books, faults

    def signed(status: int, payload: bytes, signature: str | None = "") -> Response:
        headers = {}
        if signature is not None:
            headers[signing.RESPONSE_SIGNATURE] = signature or signing.sign(key, payload)
        return Response(payload, status, headers=headers, media_type="application/json")

    def refusal(status: int, body: bytes, code: ErrorCode, message: str) -> Response:
        try:
            request_id = str(json.loads(body).get("request_id", ""))
        except (ValueError, AttributeError):
            request_id = ""
        answer = WalletResponse(
            status=Status.ERROR, request_id=request_id, error=code, message=message
        )
        return signed(status, answer.body())

    in_flight = [0]  # wallet calls being served (held ones included); one event loop

    async def wallet_call(call: Call, request: Request) -> Response:
        in_flight[0] += 1
        try:
            return await serve_call(call, request)
        finally:
            in_flight[0] -= 1

    async def serve_call(call: Call, request: Request) -> Response:
        body = await request.body()
        if not signing.verify(key, body, request.headers.get(signing.REQUEST_SIGNATURE)):
            return refusal(401, body, ErrorCode.INVALID_SIGNATURE, "request signature")
        try:
            parsed = REQUESTS[call].model_validate_json(body)
        except ValidationError as e:
            return refusal(400, body, ErrorCode.INVALID_REQUEST, str(e.errors()[0]["msg"]))
        fault = faults.next(call)
        plan = faults.plan
        if plan.latency_ms:
            await asyncio.sleep(plan.latency_ms / 1000)
        if fault is Fault.ERROR_5XX:
            return Response(b"injected failure", 500)
        if fault is Fault.TIMEOUT_BEFORE:
            await asyncio.sleep(plan.hang_ms / 1000)
            return Response(b"injected timeout", 504)
        if fault is Fault.LATE:
            await asyncio.sleep(plan.hang_ms / 1000)
        answer = _answer(books, parsed)
        if fault is Fault.DUPLICATE:
            answer = _answer(books, parsed)
        if fault is Fault.TIMEOUT_AFTER:
            await asyncio.sleep(plan.hang_ms / 1000)
        if fault in _CORRUPT:
            return _corrupt(fault, answer, signed)
        return signed(200, answer.body())

    for call in Call:
        app.add_api_route(
            f"/{call}", _bind(wallet_call, call), methods=["POST"], name=f"wallet {call}"
        )

    async def admin_body(request: Request) -> bytes | None:
        body = await request.body()
        ok = signing.verify(key, body, request.headers.get(signing.REQUEST_SIGNATURE))
        return body if ok else None

    def unsigned_admin() -> Response:
        return Response(b'{"error":"invalid-signature"}', 401, media_type="application/json")

    @app.get("/health")
    def health() -> dict[str, object]:
        """Up, and how many wallet calls are in progress (tests wait for held ones)."""
        return {"status": "ok", "in_flight": in_flight[0]}

    @app.post("/admin/players")
    async def set_players(request: Request) -> Response:
        body = await admin_body(request)
        if body is None:
            return unsigned_admin()
        for p in PlayersBody.model_validate_json(body).players:
            books.set_player(p.token, p.currency, p.balance)
        return signed(200, b'{"status":"ok"}')

    @app.post("/admin/balances")
    async def balances(request: Request) -> Response:
        body = await admin_body(request)
        if body is None:
            return unsigned_admin()
        out: dict[str, Any] = {}
        for token in TokensBody.model_validate_json(body).tokens:
            p = books.player(token)
            out[token] = None if p is None else {"currency": p.currency, "balance": p.balance}
        return signed(200, json.dumps({"balances": out}).encode())

    @app.post("/admin/faults")
    async def set_faults(request: Request) -> Response:
        body = await admin_body(request)
        if body is None:
            return unsigned_admin()
        faults.set(FaultPlan.model_validate_json(body))
        return signed(200, b'{"status":"ok"}')

    @app.post("/admin/transactions")
    async def transactions(request: Request) -> Response:
        if await admin_body(request) is None:
            return unsigned_admin()
        rows = [r.__dict__ for r in books.transactions()]
        return signed(200, json.dumps({"transactions": rows}).encode())

    return app


def _bind(handler: Any, call: Call) -> Any:
    async def endpoint(request: Request) -> Response:
        response: Response = await handler(call, request)
        return response

    return endpoint


def _answer(books: WalletBooks, request: BalanceRequest | Any) -> WalletResponse:
    if isinstance(request, BalanceRequest):
        return books.balance(request)
    assert isinstance(request, TransactionRequest)
    return books.apply(request)


def _corrupt(fault: Fault, answer: WalletResponse, signed: Callable[..., Response]) -> Response:
    """The answer as a broken wallet would send it (the call itself was applied)."""
    if fault is Fault.BAD_JSON:
        return signed(200, b'{"status": "ok", "balance": ')
    if fault is Fault.BAD_SIGNATURE:
        body = answer.body()
        return signed(200, body, signing.sign(b"not the operator's key", body))
    if fault is Fault.UNSIGNED:
        return signed(200, answer.body(), None)
    data = json.loads(answer.body())
    if fault is Fault.OTHER_CURRENCY:
        data["currency"] = "USD" if data.get("currency") != "USD" else "EUR"
    elif fault is Fault.OTHER_AMOUNT:
        data["amount"] = (data.get("amount") or 0) + 1
    else:
        data["balance"] = -1
    return signed(200, json.dumps(data).encode())
