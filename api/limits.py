"""The HTTP guard: before one byte of a request body is read, the caller is authenticated,
rate-limited and size-checked.

An ASGI middleware (outermost), so an unauthenticated or oversized request costs the
server its headers only:

- ``/v1/…`` needs a valid bearer credential (any role; each route then checks its own):
  none or an unknown one is answered 401 at once, and counts against the caller's address
  (``auth_failures_per_second`` with a burst of ``auth_failure_burst``), beyond which
  the address gets 429 with ``Retry-After``;
- every request counts against its address (``requests_per_address_per_second``) and,
  once authenticated, its credential (``requests_per_credential_per_second``), each a
  token bucket with a burst of twice its rate: 429 with ``Retry-After`` when empty;
- a game session's commands (``POST``) count against the session
  (``session_commands_per_second``, burst twice that): 429 ``too-many-commands`` with
  ``Retry-After``, before the command is run, so a refused one changes nothing; the
  answer is held for :data:`HOLD_SECONDS` on a kept connection (a flood costs little);
- a body larger than ``max_body_bytes`` is answered 413: by its ``Content-Length``
  before reading it, or, for a chunked body, as soon as more than that has arrived.
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote_to_bytes

import anyio

from api.auth import Caller, Credentials

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RATE_LIMITED = (429, "rate-limited")
TOO_MANY_COMMANDS = (429, "too-many-commands")
HOLD_SECONDS = 1.0
"""A session over its command rate waits this long for its 429 (on a kept connection): a
script that ignores ``Retry-After`` gets one refusal a second per connection, each
costing the server almost nothing, instead of as many as it can send."""
MAX_KEYS = 100_000  # buckets kept (least recently used dropped): memory stays bounded


class Buckets:
    """Token buckets by key: ``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float]) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> float:
        """Take one token; return 0, or the seconds to wait until one is available."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens, then = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > MAX_KEYS:
            self._buckets.popitem(last=False)
        return wait


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        credentials: Callable[[], Credentials],
        max_body_bytes: int,
        per_address: float,
        per_credential: float,
        failures: float,
        failure_burst: int,
        session_commands: float = 0.0,
        commands: Buckets | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.max_body = max_body_bytes
        self.addresses = Buckets(per_address, per_address * 2, clock)
        self.callers = Buckets(per_credential, per_credential * 2, clock)
        self.failures = Buckets(failures, failure_burst, clock)
        self.commands = commands or command_buckets(session_commands, clock)
        """A session's command rate: shared with its table socket's commands."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # a socket's handshake is a request of its address (its credential is checked
            # by its route, which answers a refusal as REST does: api.table_socket)
            wait = self.addresses.take(str((scope.get("client") or ("?",))[0]))
            if wait:
                await _deny_socket(send, wait)
                return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = str((scope.get("client") or ("?",))[0])
        wait = self.addresses.take(address)
        if wait:
            await _too_many(send, wait, "too many requests from this address")
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if scope["path"].startswith("/v1/"):
            caller = self._identify(headers.get(b"authorization") or _stream_token(scope))
            if caller is None:
                wait = self.failures.take(address)
                if wait:
                    await _too_many(send, wait, "too many failed authentications")
                    return
                await _reply(
                    send,
                    401,
                    "unauthenticated",
                    "a valid bearer token is required",
                    {"www-authenticate": "Bearer"},
                )
                return
            wait = self.callers.take(f"{caller.role}:{caller.session_id or caller.watcher or ''}")
            if wait:
                await _too_many(send, wait, "too many requests with this credential")
                return
            if caller.session_id is not None and scope["method"] == "POST":
                wait = self.commands.take(caller.session_id)
                if wait:
                    kept = await _drain(receive, headers, self.max_body)
                    await anyio.sleep(HOLD_SECONDS)
                    await _too_many(
                        send,
                        wait,
                        "too many commands in this session",
                        TOO_MANY_COMMANDS,
                        close=not kept,
                    )
                    return
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.max_body:
                await _too_large(send, self.max_body)
                return
            await self.app(scope, receive, send)
            return
        if headers.get(b"transfer-encoding") is None:
            await self.app(scope, receive, send)
            return
        # A chunked body: read at most the limit before the application sees it.
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body:
                await _too_large(send, self.max_body)
                return
            chunks.append(message)
            if not message.get("more_body"):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    def _identify(self, header: bytes | None) -> Caller | None:
        if header is None:
            return None
        scheme, _, token = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.credentials().identify(token.strip())


def command_buckets(rate: float, clock: Callable[[], float] = time.monotonic) -> Buckets:
    """The sessions' command buckets: ``rate`` a second, a burst of twice that."""
    return Buckets(rate, max(1.0, rate * 2), clock)


async def _deny_socket(send: Send, wait: float) -> None:
    """429 to a WebSocket handshake (the ASGI denial response), with ``Retry-After``."""
    retry = max(1, math.ceil(wait))
    body = json.dumps(
        {
            "code": "rate-limited",
            "message": f"too many requests from this address; retry after {retry} s",
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"retry-after", str(retry).encode())]
    await send({"type": "websocket.http.response.start", "status": 429, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


def _stream_token(scope: Scope) -> bytes | None:
    """A browser's EventSource cannot send headers: the table stream (only) takes the
    session token as ``?access_token=`` (RFC 6750 §2.3)."""
    if not scope["path"].endswith("/stream"):
        return None
    for pair in scope.get("query_string", b"").split(b"&"):
        name, _, value = pair.partition(b"=")
        if name == b"access_token" and value:
            return b"Bearer " + unquote_to_bytes(value)
    return None


async def _reply(
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    close: bool = True,
) -> None:
    body = json.dumps({"code": code, "message": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if close:  # the unread body must not be taken for the next request
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _drain(receive: Receive, headers: dict[bytes, bytes], limit: int) -> bool:
    """Read and drop a request's body of at most ``limit`` bytes announced by its
    ``Content-Length``, so its connection can be kept; False if it cannot be."""
    if headers.get(b"transfer-encoding") is not None:
        return False
    length = headers.get(b"content-length", b"0")
    if not length.isdigit() or int(length) > limit:
        return False
    more = int(length) > 0
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return False
        more = bool(message.get("more_body"))
    return True


async def _too_many(
    send: Send,
    wait: float,
    message: str,
    refusal: tuple[int, str] = RATE_LIMITED,
    close: bool = True,
) -> None:
    retry = max(1, math.ceil(wait))
    status, code = refusal
    text = f"{message}; retry after {retry} s"
    await _reply(send, status, code, text, {"retry-after": str(retry)}, close)


async def _too_large(send: Send, limit: int) -> None:
    await _reply(send, 413, "payload-too-large", f"the request body exceeds {limit} bytes")
