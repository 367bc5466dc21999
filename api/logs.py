"""Logs an operator's stack can ingest: JSON lines (``CROUPIER_LOG_FORMAT=json``), or text
for a terminal (``text``; the default ``auto`` picks text when stderr is a terminal).

Every line carries, where they apply, the request's id (``X-Request-Id``: the caller's if
it is a plain token, else a new one; returned on every response), the session, the live
table and the game code of the round the request concerned (from the path, the session
token's id part, or the successful response). In JSON mode one access line is written per
request (logger ``croupier.access``) in place of uvicorn's.

No token or secret ever: a filter on every handler replaces the configured secrets
(operator, auditor and metrics tokens, the session-token secret, the sealing and signing
keys given in the environment), any bearer credential, any ``access_token=`` query value
and anything shaped like a session token with ``[redacted]``, in the message, its
arguments and any traceback.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from ledger import entropy
from ledger.settings import Settings

ACCESS = logging.getLogger("croupier.access")
REDACTED = "[redacted]"
FIELDS = ("request_id", "session", "table", "game_code")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_SESSION = re.compile(r"/sessions/([0-9a-fA-F-]{36})")
_TABLE = re.compile(r"/tables/([A-Za-z0-9_-]{1,40})")
_ROUND = re.compile(r"/(?:rounds|table-rounds)/([A-Za-z0-9-]{6,40})")
_GAME_CODE = re.compile(r"^[A-Z0-9]{2,5}-\d{8}-\d{6}-[A-Z0-9]{4,8}$")
# What a secret looks like wherever it turns up: a bearer credential, a query's
# access_token, a viewer link's sig, a session token ("[cell~]<uuid>.<expiry>.<mac>").
_SHAPES = re.compile(
    r"(?i)(bearer\s+)\S+"
    r"|(access_token=)[^&\s\"']+"
    r"|(sig=)[^&\s\"']+"  # a round viewer link's MAC (api/viewer.py)
    r"|[a-z0-9-]*~?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"\.\d{6,12}\.[A-Za-z0-9_-]{20,}"
)

_context: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "croupier_log_context", default=None
)


def context() -> dict[str, str]:
    """The current request's log fields (empty outside a request)."""
    return _context.get() or {}


class Redact(logging.Filter):
    """Takes every secret out of a record before any handler formats it."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)

    def clean(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _SHAPES.sub(
            lambda m: (m.group(1) or m.group(2) or m.group(3) or "") + REDACTED, text
        )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg, record.args = self.clean(message), None
        if record.exc_info:
            record.exc_text = self.clean(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        for name in FIELDS:
            if not hasattr(record, name) and (value := context().get(name)):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, the request's fields
    and any extra fields a record was given (the access line's method, path, status)."""

    _PLAIN = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message"}

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in self._PLAIN and not key.startswith("_") and key != "color_message":
                doc[key] = value
        if record.exc_text:
            doc["exception"] = record.exc_text
        return json.dumps(doc, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = " ".join(f"{k}={getattr(record, k)}" for k in FIELDS if hasattr(record, k))
        return f"{line} [{ids}]" if ids else line


def log_format(settings: Settings) -> str:
    if settings.log_format == "auto":
        return "text" if sys.stderr.isatty() else "json"
    return settings.log_format


def secrets_of(settings: Settings) -> list[str]:
    found = [
        s.get_secret_value()
        for s in (
            settings.operator_token,
            settings.auditor_token,
            settings.metrics_token,
            settings.api_secret,
            settings.signing_key,
            settings.sealing_key,
            *(w.key for w in settings.wallets.values()),
        )
        if s is not None
    ]
    return found


def config(
    settings: Settings, extra_secrets: Iterable[str] = (), *, access: bool = True
) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for croupier and uvicorn (``uvicorn.run(log_config=)``
    applies it in every worker process too). ``access`` False: no line per request."""
    kind = "JsonFormatter" if log_format(settings) == "json" else "TextFormatter"
    formatter = {"()": f"{__name__}.{kind}"}
    redact = {"()": f"{__name__}.Redact", "secrets": [*secrets_of(settings), *extra_secrets]}
    handler = {
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
        "formatter": "line",
        "filters": ["redact"],
    }
    loggers = {
        name: {"handlers": ["stderr"], "level": "INFO", "propagate": False}
        for name in ("croupier", "uvicorn", "uvicorn.error", "uvicorn.access")
    }
    if not access:
        loggers["croupier.access"] = {"level": "WARNING"}
        loggers["uvicorn.access"]["level"] = "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": redact},
        "formatters": {"line": formatter},
        "handlers": {"stderr": handler},
        "loggers": loggers,
        "root": {"handlers": ["stderr"], "level": "WARNING"},
    }


def enter(fields: dict[str, str]) -> contextvars.Token[dict[str, str] | None]:
    """Make ``fields`` the log fields of every line logged until :func:`leave`."""
    return _context.set(fields)


def leave(token: contextvars.Token[dict[str, str] | None]) -> None:
    _context.reset(token)


def note_answer(fields: dict[str, str], body: bytes) -> None:
    """The game code a successful answer names, into its fields (if not known yet)."""
    if "game_code" not in fields:  # else nothing to read (``note_game_code``)
        code = _game_code(body)
        if code:
            fields["game_code"] = code


def access_line(scope: Any, status: int, started: float, fields: dict[str, str]) -> None:
    """The JSON access line of one answered request (:class:`api.edge.Edge`)."""
    route = getattr(scope.get("route"), "path", None)
    ACCESS.info(
        "%s %s %s",
        scope["method"],
        route or scope["path"],
        status,
        extra={
            "method": scope["method"],
            "route": route,
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            **fields,
        },
    )


def request_fields(scope: Any) -> dict[str, str]:
    """A request's log fields from its scope: its request id, session, table, game code."""
    headers = dict(scope.get("headers", []))
    given = headers.get(b"x-request-id", b"").decode("latin-1")
    fields = {"request_id": given if _REQUEST_ID.match(given) else entropy.uuid4().hex}
    path: str = scope["path"]
    if m := _SESSION.search(path):
        fields["session"] = m.group(1).lower()
    elif sid := _token_session(headers.get(b"authorization", b"").decode("latin-1"), scope):
        fields["session"] = sid  # a session token's id part (never the token itself)
    if m := _TABLE.search(path):
        fields["table"] = m.group(1)
    if m := _ROUND.search(path):
        fields["game_code"] = m.group(1).upper()
    return fields


def note_game_code(code: str) -> None:
    """The request's answer names this game code in its ``code``: its log fields take it
    as :func:`_game_code` would read it from the answer's body, which then is not parsed
    again (the game actions' answers: parsing each was 8 % of the server's CPU)."""
    fields = _context.get()
    if fields is not None and "game_code" not in fields and _GAME_CODE.match(code):
        fields["game_code"] = code


def _token_session(authorization: str, scope: Any) -> str | None:
    """The session id a session token names (its first part), from the bearer header or,
    for an EventSource, the ``access_token`` query parameter; None for any other token."""
    scheme, _, credential = authorization.partition(" ")
    if scheme.lower() != "bearer":
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        credential = (query.get("access_token") or [""])[0]
    inner = credential.strip().rpartition("~")[2]
    sid = inner.split(".")[0]
    return sid.lower() if inner.count(".") == 2 and len(sid) == 36 else None


def _game_code(body: bytes) -> str | None:
    if not body or body[:1] != b"{":
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    for key in ("code", "game_code"):
        value = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(value, str) and _GAME_CODE.match(value):
            return value
    return None
