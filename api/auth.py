"""Who is calling: the operator's backend, an auditor, the game client of one session, or a
spectator of one table.

Four bearer credentials, no state in the database:

- the operator token and the auditor token are fixed secrets (``CROUPIER_OPERATOR_TOKEN``,
  ``CROUPIER_AUDITOR_TOKEN``; generated on first run into ``DATA_DIR/api-tokens.json``,
  mode 0600, when unset);
- a session token is ``"{session_id}.{expires}.{mac}"`` with ``expires`` the Unix time
  (seconds) after which it is refused (``CROUPIER_SESSION_TOKEN_TTL_SECONDS`` after it
  was issued, default 24 h) and ``mac`` the unpadded base64url HMAC-SHA256 of
  ``"{session_id}.{expires}"`` under the server's API secret (``CROUPIER_API_SECRET``, or
  32 random bytes in ``KEYS_DIR/api-secret.key``, mode 0600, generated on first run). The
  operator receives it when it opens the session and hands it to the game client; it
  grants the game actions of that one session and nothing else, and is refused once the
  session is closed. Changing the secret invalidates every issued session token.

- a spectator token is ``"spectator.{expires}.{id}.{table}.{mac}"`` (HMAC-SHA256 under the
  same secret, another label): the operator issues it (``POST /v1/tables/{table}/spectators``)
  to someone who watches that one table without a seat or a balance (seed 002 "For Fun").
  It reads the table's shared state and stream and nothing else: every other route wants
  another role, so it can neither act, nor chat, nor read a seat. Its ``id`` counts its
  streams like a session's. Issued by the operator rather than a public feed: the operator
  decides who may watch (its own login and age checks, its jurisdictions), each watcher
  is counted against the stream limits and rate-limited by its own key, and a token
  expires; an unauthenticated feed would be open to any scraper of the live statistics.

Every comparison is constant-time (``hmac.compare_digest``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from fastapi import Depends, Request
from fastapi import Path as PathParam
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.common import canonical_session_id
from api.errors import ApiError
from api.schemas import SESSION_ID_PATTERN
from ledger.settings import Settings
from ledger.unit_of_work import UnitOfWork

if TYPE_CHECKING:
    from ledger.casino import Casino
    from ledger.commands import Command

R = TypeVar("R")
TOKENS_FILE = "api-tokens.json"
SECRET_FILE = "api-secret.key"
_MAC_LABEL = b"croupier/session-token/v2\x00"
_SPECTATOR_LABEL = b"croupier/spectator-token/v1\x00"
SPECTATOR_PREFIX = "spectator."
MIN_SECRET_BYTES = 32
KNOWN_TOKENS = 100_000  # verified session tokens remembered (Credentials._known)


class Role(StrEnum):
    OPERATOR = "operator"
    AUDITOR = "auditor"
    SESSION = "session"
    SPECTATOR = "spectator"


@dataclass(frozen=True)
class Caller:
    role: Role
    session_id: str | None = None
    table: str | None = None
    """A spectator's table (the one its token lets it watch)."""
    watcher: str | None = None
    """A spectator token's own id (its streams are counted by it)."""


@dataclass(frozen=True)
class Credentials:
    """The server's secrets and where they came from (for the start-up message)."""

    operator_token: str
    auditor_token: str
    secret: bytes
    tokens_from: str
    secret_from: str
    session_ttl: int = 86_400
    clock: Callable[[], float] = time.time
    closed_grace: int = 300
    opened_at: Callable[[str], float] | None = None
    """When a session was opened (its expiry counts from then, so a repeated open-session
    request is answered with the very same token)."""
    _known: dict[str, tuple[Caller, int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Session and spectator tokens already verified, with their expiry: a game client
    sends its token with every request, and the guard and the route both identify it
    (two HMACs a request before). Only tokens whose MAC was checked are kept, so a token
    is never taken on the strength of a look-up alone; each use still checks the expiry
    against the clock. At most :data:`KNOWN_TOKENS` entries (then emptied)."""

    def session_token(self, session_id: str) -> str:
        start = self.opened_at(session_id) if self.opened_at else self.clock()
        signed = f"{session_id}.{int(start) + self.session_ttl}"
        return f"{signed}.{self._mac(signed)}"

    def _mac(self, signed: str) -> str:
        digest = hmac.new(self.secret, _MAC_LABEL + signed.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def spectator_token(self, table: str, minutes: int) -> tuple[str, int]:
        """A token to watch ``table`` for ``minutes`` (and its expiry, Unix seconds):
        ``spectator.{expires}.{id}.{table}.{mac}``, stateless like a session token."""
        expires = int(self.clock()) + minutes * 60
        signed = f"{expires}.{secrets.token_hex(8)}.{table}"
        return f"{SPECTATOR_PREFIX}{signed}.{self._spectator_mac(signed)}", expires

    def _spectator_mac(self, signed: str) -> str:
        digest = hmac.new(self.secret, _SPECTATOR_LABEL + signed.encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()

    def _spectator(self, token: str) -> Caller | None:
        signed, _, mac = token[len(SPECTATOR_PREFIX) :].rpartition(".")
        parts = signed.split(".", 2)
        if len(parts) != 3 or not parts[0].isdigit() or len(parts[0]) > 12:
            return None
        if not hmac.compare_digest(mac.encode(), self._spectator_mac(signed).encode()):
            return None
        if int(parts[0]) < self.clock():
            return None  # expired
        return Caller(Role.SPECTATOR, table=parts[2], watcher=parts[1])

    def identify(self, token: str) -> Caller | None:
        """The caller a bearer token stands for, or None for an unknown token."""
        known = self._known.get(token)
        if known is not None:
            caller, expires = known
            return None if expires < self.clock() else caller
        caller_ = self._identify(token)
        if caller_ is not None and caller_.role in (Role.SESSION, Role.SPECTATOR):
            if len(self._known) >= KNOWN_TOKENS:
                self._known.clear()
            self._known[token] = (caller_, _expiry(token, caller_.role))
        return caller_

    def _identify(self, token: str) -> Caller | None:
        raw = token.encode()
        if hmac.compare_digest(raw, self.operator_token.encode()):
            return Caller(Role.OPERATOR)
        if hmac.compare_digest(raw, self.auditor_token.encode()):
            return Caller(Role.AUDITOR)
        if token.startswith(SPECTATOR_PREFIX):
            return self._spectator(token)
        signed, _, mac = token.rpartition(".")
        session_id, _, expires = signed.partition(".")
        try:
            canonical = str(UUID(session_id))
        except ValueError:
            return None
        # Only the canonical spelling is valid, so one session has one token per expiry.
        if canonical != session_id or not expires.isdigit() or len(expires) > 12:
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(signed).encode()):
            return None
        if int(expires) < self.clock():
            return None  # expired
        return Caller(Role.SESSION, session_id)


def _expiry(token: str, role: Role) -> int:
    """The expiry (Unix seconds) of a session or spectator token already verified."""
    if role is Role.SPECTATOR:
        return int(token[len(SPECTATOR_PREFIX) :].split(".", 1)[0])
    return int(token.rpartition(".")[0].partition(".")[2])


def load_credentials(settings: Settings) -> Credentials:
    """Tokens and secret from the settings, else from (or newly into) the data directory."""
    tokens_from = "environment"
    operator = settings.operator_token.get_secret_value() if settings.operator_token else None
    auditor = settings.auditor_token.get_secret_value() if settings.auditor_token else None
    if not operator or not auditor:
        path = settings.data_dir / TOKENS_FILE
        stored = _read_or_create_json(
            path,
            lambda: {
                "operator": secrets.token_urlsafe(32),
                "auditor": secrets.token_urlsafe(32),
            },
        )
        operator = operator or stored["operator"]
        auditor = auditor or stored["auditor"]
        tokens_from = str(path)
    if hmac.compare_digest(operator.encode(), auditor.encode()):
        raise ValueError("the operator and auditor tokens must differ")
    if settings.api_secret:
        secret = settings.api_secret.get_secret_value().encode()
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"CROUPIER_API_SECRET must be at least {MIN_SECRET_BYTES} characters")
        secret_from = "environment"
    else:
        path = settings.key_directory / SECRET_FILE
        secret = _read_or_create_bytes(path, lambda: secrets.token_bytes(32))
        secret_from = str(path)
    return Credentials(
        operator,
        auditor,
        secret,
        tokens_from,
        secret_from,
        settings.session_token_ttl_seconds,
        closed_grace=settings.closed_session_grace_seconds,
    )


def _create_exclusive(path: Path, data: bytes) -> bool:
    """Write a new 0600 file; False if another process created it first."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return True


def _read_or_create_json(path: Path, make: object) -> dict[str, str]:
    if not path.exists():
        assert callable(make)
        _create_exclusive(path, json.dumps(make(), indent=2).encode())
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or not doc.get("operator") or not doc.get("auditor"):
        raise ValueError(f"{path} must hold non-empty 'operator' and 'auditor' tokens")
    return {"operator": str(doc["operator"]), "auditor": str(doc["auditor"])}


def _read_or_create_bytes(path: Path, make: object) -> bytes:
    if not path.exists():
        assert callable(make)
        _create_exclusive(path, make())
    data = path.read_bytes()
    if len(data) < MIN_SECRET_BYTES:
        raise ValueError(f"{path} must hold at least {MIN_SECRET_BYTES} bytes")
    return data


# -- FastAPI dependencies ------------------------------------------------------------------

# One scheme per audience, so the OpenAPI document says which credential each route takes.
_operator_scheme = HTTPBearer(
    scheme_name="operator", description="the operator's token", auto_error=False
)
_auditor_scheme = HTTPBearer(
    scheme_name="auditor", description="the auditors' read-only token", auto_error=False
)
_session_scheme = HTTPBearer(
    scheme_name="session",
    description="the session token returned when the operator opened the session",
    auto_error=False,
)

Bearer = HTTPAuthorizationCredentials | None


def _caller(request: Request, bearer: Bearer) -> Caller:
    if bearer is None:
        raise ApiError(401, "unauthenticated", "a bearer token is required")
    credentials: Credentials = request.app.state.credentials
    caller = credentials.identify(bearer.credentials)
    if caller is None:
        raise ApiError(401, "unauthenticated", "unknown or invalid bearer token")
    return caller


def _forbidden(caller: Caller, needed: str) -> ApiError:
    return ApiError(403, "forbidden", f"the {caller.role} credential cannot {needed}")


SessionIdPath = Annotated[
    str, PathParam(pattern=SESSION_ID_PATTERN, description="the game session's id (a UUID)")
]

# The dependencies are ``async`` where they do no I/O, so they need no worker thread.


async def operator(
    request: Request, bearer: Annotated[Bearer, Depends(_operator_scheme)]
) -> Caller:
    caller = _caller(request, bearer)
    if caller.role is not Role.OPERATOR:
        raise _forbidden(caller, "use operator endpoints")
    return caller


async def auditor(request: Request, bearer: Annotated[Bearer, Depends(_auditor_scheme)]) -> Caller:
    caller = _caller(request, bearer)
    if caller.role is not Role.AUDITOR:
        raise _forbidden(caller, "use auditor endpoints")
    return caller


def _own_session(caller: Caller, session_id: str) -> Caller:
    if caller.role is not Role.SESSION:
        raise _forbidden(caller, "play a game session (use the session's token)")
    if caller.session_id != canonical_session_id(session_id):
        raise ApiError(403, "forbidden", "this session token belongs to another game session")
    return caller


def _refuse_if_closed(credentials: Credentials, session: object) -> None:
    """A session token is refused once its session has been closed for longer than the
    grace (``CROUPIER_CLOSED_SESSION_GRACE_SECONDS``, default 300: the game client can
    still show the final state; until then actions are refused by the ledger as
    ``session-closed``). Anything but a game session passes: the route answers 404."""
    from ledger.accounts import GameSession

    if not isinstance(session, GameSession):
        return
    closed_for = credentials.clock() - session.modified_on.timestamp()
    if session.closed and closed_for > credentials.closed_grace:
        raise ApiError(401, "unauthenticated", "the session of this token is closed")


def _open_session(request: Request, caller: Caller) -> Caller:
    """The closed-session check (:func:`_refuse_if_closed`) on its own: a sync check, it
    reads the session from the store, so FastAPI runs it in a worker thread. The game
    actions run it inside their command instead (:func:`session_actor`)."""
    from eventsourcing.application import AggregateNotFoundError

    if caller.role is Role.SESSION and caller.session_id is not None:
        credentials: Credentials = request.app.state.credentials
        # Read only: the cached session brought up to date from the store (the same
        # fast-forward as ``get_session``) but not copied, as nothing here changes it.
        try:
            session = request.app.state.casino.repository.get(
                UUID(caller.session_id), deepcopy_from_cache=False
            )
        except AggregateNotFoundError:
            return caller  # the route answers 404
        _refuse_if_closed(credentials, session)
    return caller


@dataclass(frozen=True)
class Actor:
    """The game client of one session, about to run a command on it through
    :meth:`command`, which hands the command the closed-session check (``check``)."""

    session_id: str
    check: Callable[[UnitOfWork], None]
    casino: Casino

    def command(self, request_id: str, cmd: Command[R]) -> R:
        return self.casino.command(request_id, cmd, self.check)


def session_player(
    request: Request,
    session_id: SessionIdPath,
    bearer: Annotated[Bearer, Depends(_session_scheme)],
) -> Caller:
    """The game client of the session named in the path, and nobody else."""
    return _open_session(request, _own_session(_caller(request, bearer), session_id))


def session_reader(
    request: Request,
    session_id: SessionIdPath,
    player: Annotated[Bearer, Depends(_session_scheme)],
    op: Annotated[Bearer, Depends(_operator_scheme)],
) -> Caller:
    """The session's own game client or the operator (read-only views of one session)."""
    caller = _caller(request, player or op)
    if caller.role is Role.OPERATOR:
        return Caller(Role.OPERATOR, canonical_session_id(session_id))
    return _open_session(request, _own_session(caller, session_id))


async def session_actor(
    request: Request,
    session_id: SessionIdPath,
    bearer: Annotated[Bearer, Depends(_session_scheme)],
) -> Actor:
    """The game client of the session named in the path, for a game action: the token
    and the path checked here (no I/O, so in the event loop: no worker thread), the
    closed-session check handed to the command, which runs it on the session it loads
    anyway, in its batch: the action's one read of the session (``session_player``
    reads it once more, in a worker thread of its own). As strict: what it refuses is
    refused before the command runs or its request id is looked up."""
    caller = _own_session(_caller(request, bearer), session_id)
    assert caller.session_id is not None  # a session credential
    credentials: Credentials = request.app.state.credentials
    sid = UUID(caller.session_id)

    def check(uow: UnitOfWork) -> None:
        _refuse_if_closed(credentials, uow.get(Aggregate, sid))

    return Actor(caller.session_id, check, request.app.state.casino)


async def any_caller(
    request: Request,
    player: Annotated[Bearer, Depends(_session_scheme)],
    op: Annotated[Bearer, Depends(_operator_scheme)],
    aud: Annotated[Bearer, Depends(_auditor_scheme)],
) -> Caller:
    """Any valid credential (public game information such as paytables)."""
    return _caller(request, player or op or aud)
