"""The round viewer: ``/rounds/{code}`` draws one round in the browser, and its data.

Who may look: the operator or an auditor (bearer token), or anyone holding a short-lived
signed link the operator hands out (``?expires=UNIX&sig=MAC``: HMAC-SHA256 of the game
code and the expiry under the server's API secret; nothing is stored, and changing the
secret revokes every link). The page is one template and one script (``api/static``),
no build step: the script draws each step's cards, recomputes ``SHA-256(seed)`` against
the commitment and checks the round's inclusion proofs against the latest signed
checkpoint (root and Ed25519 signature) with Web Crypto.

Also here: ``GET /v1/rounds/{code}/check``, the server side of ``audit-cli round`` (every
event's signature, chain link and re-derivation from the seed), and
``GET /v1/rounds/{code}/link``, which makes a signed link.

A live blackjack table round (``IBJ-...``) is found by its code the same way: its page
draws every seat, the shared cards and the dealer's per step, the shoe's commitment (and
seed, once the shoe is done) and the proofs of the round's and its seats' events; its
check is ``audit-cli round``'s for table rounds (:mod:`audit_cli.table_round`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from api import auditor as auditor_routes
from api.auth import Caller, Credentials, Role, _auditor_scheme, _operator_scheme
from api.common import ERRORS, casino
from api.errors import ApiError
from audit_cli.round_check import RoundReport, check_rows
from audit_cli.rows import Row
from audit_cli.table_round import check_table_round, is_table_code
from ledger.casino import Casino
from ledger.envelope import TRUST_ID
from ledger.errors import LedgerError, RoundNotFound, TamperDetected
from ledger.money import currencies
from ledger.rounds import round_id_for
from ledger.tables import views as table_queries

STATIC = Path(__file__).with_name("static")
_LINK_LABEL = b"croupier/round-link/v1\x00"
MAX_LINK_MINUTES = 7 * 24 * 60
CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,39}$"

App = Annotated[Casino, Depends(casino)]
GameCode = Annotated[str, PathParam(pattern=CODE_PATTERN, description="e.g. RD-20261129-1…")]

Bearer = HTTPAuthorizationCredentials | None


# -- signed links ----------------------------------------------------------------------


def link_mac(secret: bytes, code: str, expires: int) -> str:
    """The MAC of a viewer link: unpadded base64url HMAC-SHA256 of code and expiry."""
    message = _LINK_LABEL + code.upper().encode() + b"\x00" + str(expires).encode()
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def signed_link(
    secret: bytes, code: str, minutes: int, now: float | None = None
) -> tuple[str, int]:
    """(path with query, expiry in Unix seconds) of a link valid for ``minutes``."""
    expires = int(now if now is not None else time.time()) + minutes * 60
    code = code.upper()
    return f"/rounds/{quote(code)}?expires={expires}&sig={link_mac(secret, code, expires)}", expires


def _link_valid(secret: bytes, code: str, expires: int | None, sig: str | None) -> bool:
    if expires is None or sig is None or expires < time.time():
        return False
    return hmac.compare_digest(sig.encode(), link_mac(secret, code, expires).encode())


async def viewer(
    request: Request,
    game_code: GameCode,
    op: Annotated[Bearer, Depends(_operator_scheme)],
    aud: Annotated[Bearer, Depends(_auditor_scheme)],
    expires: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    sig: Annotated[str | None, Query(max_length=100)] = None,
) -> Caller:
    """The operator, an auditor, or the holder of a valid signed link to this round."""
    credentials: Credentials = request.app.state.credentials
    bearer = op or aud
    if bearer is not None:
        caller = credentials.identify(bearer.credentials)
        if caller is None:
            raise ApiError(401, "unauthenticated", "unknown or invalid bearer token")
        if caller.role in (Role.OPERATOR, Role.AUDITOR):
            return caller
        raise ApiError(403, "forbidden", f"the {caller.role} credential cannot view rounds")
    if expires is not None or sig is not None:
        if not _link_valid(credentials.secret, game_code, expires, sig):
            raise ApiError(403, "link-invalid", "this round link is invalid or has expired")
        return Caller(Role.AUDITOR)
    raise ApiError(401, "unauthenticated", "a bearer token or a signed round link is required")


async def operator_only(
    request: Request, op: Annotated[Bearer, Depends(_operator_scheme)]
) -> Caller:
    credentials: Credentials = request.app.state.credentials
    caller = credentials.identify(op.credentials) if op else None
    if caller is None:
        raise ApiError(401, "unauthenticated", "the operator's bearer token is required")
    if caller.role is not Role.OPERATOR:
        raise ApiError(403, "forbidden", f"the {caller.role} credential cannot make links")
    return caller


# -- the check and the page's data -----------------------------------------------------


class CheckFinding(BaseModel):
    step: str
    version: int
    field: str
    message: str
    recorded: Any = None
    derived: Any = None


class RoundCheck(BaseModel):
    """Every event of a round checked: signature, chain link, re-derivation from the seed."""

    code: str
    status: str
    ok: bool
    signatures_checked: bool
    rederived: bool
    problems: list[str]
    findings: list[CheckFinding]
    steps: list[dict[str, Any]]


class RoundLink(BaseModel):
    url: str = Field(description="path and query of the viewer page; prefix the server's origin")
    expires: int = Field(description="Unix time after which the link is refused")


def round_check(app: Casino, code: str) -> RoundReport:
    """The report of ``audit-cli round`` computed on the application's own store. It reads
    the stored rows without the application's own verification on load, so a tampered
    round is reported event by event instead of refused as a whole."""
    if not isinstance(code, str) or not code:
        raise RoundNotFound("a game code is required")
    if is_table_code(code):
        table_queries.find_round(app, code.upper())  # a typed 404 for an unknown code
        return check_table_round(app.settings.store, code.upper(), app.keyring.public_keys)
    stored = app.recorder.select_events(round_id_for(code))
    if not stored:
        raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
    # The recorder does not return notification ids here: number the rows from 1 (the
    # verifier refuses a row id of 0 as malformed; positions are not checked per round).
    rows = [
        Row(i, str(e.originator_id), e.originator_version, e.topic, e.state)
        for i, e in enumerate(stored, 1)
    ]
    trust = [
        Row(i, str(e.originator_id), e.originator_version, e.topic, e.state)
        for i, e in enumerate(app.recorder.select_events(TRUST_ID), 1)
    ]
    return check_rows(code.upper(), rows, app.keyring.public_keys, trust)


def table_round_document(app: Casino, code: str) -> dict[str, Any]:
    """What the page draws for a live blackjack round: the round as the operator's
    ``GET /v1/table-rounds/{code}`` has it (phases, shared and dealer cards, every seat),
    the shoe's commitment and seed, the check, the proofs of the round's and its seats'
    events in the latest checkpoint, and the public keys to check that checkpoint."""
    rnd = table_queries.find_round(app, code.upper())
    detail = table_queries.round_detail(app, rnd.code)
    report = check_table_round(app.settings.store, rnd.code, app.keyring.public_keys)
    try:
        ids = table_queries.round_originators(app, rnd)
        inclusion: dict[str, Any] | None = auditor_routes.inclusion(
            app, rnd.code, rnd.id, ids, None
        ).model_dump()
        not_covered = None
    except (ApiError, LedgerError, TamperDetected) as e:
        inclusion, not_covered = None, str(getattr(e, "message", e))
    totals = detail.get("totals") or {}
    return {
        "code": rnd.code,
        "game": "blackjack",
        "variant": "infinite",
        "currency": rnd.currency,
        "exponent": currencies().get(rnd.currency, 2),
        "started_at": detail["started_at"],
        "status": detail["status"],
        "staked": int(totals.get("staked") or 0),
        "payout": int(totals.get("returned") or 0),
        "outcome": detail["status"],
        "commitment": detail["shoe_commitment"],
        "seed": detail["shoe_seed"],
        "table": detail,
        "check": report.to_dict(),
        "inclusion": inclusion,
        "not_covered": not_covered,
        "public_keys": {k["kid"]: k["public_key"] for k in app.keyring.public_document()["keys"]},
    }


def round_document(app: Casino, code: str) -> dict[str, Any]:
    """Everything the page draws: the steps, the seed and commitment, the check, the
    inclusion proofs in the latest checkpoint and the public keys to check its head.
    Read from the round's events as stored, so a tampered round still shows (with the
    check's findings on top)."""
    if is_table_code(code):
        return table_round_document(app, code)
    report = round_check(app, code)
    steps = report.steps
    start, last = (steps[0], steps[-1]) if steps else ({}, {})
    ended = report.status in ("settled", "voided")
    try:
        inclusion: dict[str, Any] | None = auditor_routes.round_inclusion(
            app, report.code, None
        ).model_dump()
        not_covered = None
    except (ApiError, LedgerError, TamperDetected) as e:
        inclusion, not_covered = None, str(getattr(e, "message", e))
    currency = str(start.get("currency", ""))
    return {
        "code": report.code,
        "game": start.get("game"),
        "variant": start.get("variant"),
        "rules_version": start.get("rules_version"),
        "paytable_id": start.get("paytable_id"),
        "currency": currency,
        "exponent": currencies().get(currency, 2),
        "started_at": start.get("started_at"),
        "status": report.status,
        "stake": start.get("stake"),
        "staked": int(start.get("stake") or 0) + sum(int(s.get("stake_added") or 0) for s in steps),
        "payout": last.get("payout", 0) if report.status == "settled" else 0,
        "outcome": last.get("outcome") if report.status == "settled" else report.status,
        "commitment": start.get("commitment"),
        "seed": last.get("seed") if ended else None,
        "check": report.to_dict(),
        "inclusion": inclusion,
        "not_covered": not_covered,
        "public_keys": {k["kid"]: k["public_key"] for k in app.keyring.public_document()["keys"]},
    }


# -- routes ----------------------------------------------------------------------------

api_router = APIRouter(prefix="/v1", tags=["operator"], responses=ERRORS)
page_router = APIRouter(include_in_schema=False)


@api_router.get("/rounds/{game_code}/check", response_model=RoundCheck)
def check_round(game_code: GameCode, app: App, _: Annotated[Caller, Depends(viewer)]) -> RoundCheck:
    """Every event of the round: its signature and chain link, and every recorded view,
    decision, card and amount against the re-derivation from the revealed seed (the same
    check as ``audit-cli round``). ``ok`` is false on any finding, each naming the event."""
    return RoundCheck.model_validate(round_check(app, game_code).to_dict())


@api_router.get("/rounds/{game_code}/link", response_model=RoundLink)
def round_link(
    game_code: GameCode,
    app: App,
    request: Request,
    _: Annotated[Caller, Depends(operator_only)],
    minutes: Annotated[int, Query(ge=1, le=MAX_LINK_MINUTES)] = 60,
) -> RoundLink:
    """A signed link to the round's viewer page for a player or a regulator, valid for
    ``minutes`` (at most 7 days). Nothing is stored."""
    if is_table_code(game_code):
        code = table_queries.find_round(app, game_code.upper()).code
    else:
        code = app.find_round(game_code).code
    credentials: Credentials = request.app.state.credentials
    url, expires = signed_link(credentials.secret, code, minutes)
    return RoundLink(url=url, expires=expires)


@page_router.get("/rounds/{game_code}", response_class=HTMLResponse)
def round_page(game_code: GameCode, app: App, _: Annotated[Caller, Depends(viewer)]) -> Any:
    round_check(app, game_code)  # a typed 404 for an unknown code
    return HTMLResponse((STATIC / "round.html").read_text(encoding="utf-8"))


@page_router.get("/rounds/{game_code}/data")
def round_data(
    game_code: GameCode, app: App, _: Annotated[Caller, Depends(viewer)]
) -> dict[str, Any]:
    return round_document(app, game_code)


@page_router.get("/static/round.js")
def round_script() -> FileResponse:
    return FileResponse(STATIC / "round.js", media_type="text/javascript")
