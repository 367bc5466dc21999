"""The connection guard: what a client may hold open before it has sent a whole request.

The HTTP guard (:mod:`api.limits`) sees requests, so a client that opens connections and
never finishes its headers is invisible to it: with nothing else, 1,100 connections that
send a byte a second use up a 1,024-descriptor process and ``/health`` stops answering.
This is uvicorn's httptools protocol (the parser ``croupier serve`` runs) with:

- a header deadline: the request line and headers within ``header_timeout_seconds`` of the
  request's first byte (of the connection, for the first request), else 408 and closed
  (a connection that sent nothing at all is closed without a word);
- a body deadline: the whole body within ``body_timeout_seconds`` of the headers;
- a cap on open connections per peer address and in all (``max_connections_per_address``,
  ``max_connections``, the latter never above the descriptor limit less
  :data:`FD_RESERVE`). A connection beyond either is not served: it waits in one of
  :data:`REFUSAL_SLOTS` slots (beyond them, once the event loop's pass of accepts is
  done, the one that has sent part of a request is dropped first, then the oldest
  silent one; one silent for less than :data:`QUIET_GRACE_SECONDS` waits that moment
  more, within :data:`QUIET_SLOTS`) at most :data:`REFUSAL_GRACE_SECONDS` for its
  headers, and is then answered ``503 too-many-connections`` with ``Retry-After`` and
  closed, unless it asks for ``GET /health``, which is answered: a load balancer's probe
  still gets through (one whose request is already in when it is accepted takes no slot
  at all).

A trusted proxy's connections (``trusted_proxies``) count in all but not per address:
behind it every client shares its address.

A WebSocket (the table socket, :mod:`api.table_socket`) is a connection upgraded from an
admitted request: it keeps counting toward both caps until it closes
(:class:`GuardedWebSocket` releases it); a connection beyond a cap is never upgraded (it
gets the 503). The protocol is uvicorn's ``websockets-sansio`` (the ``websockets``
package's Sans-I/O core), with per-message compression off: a table message is encoded
once and the same bytes go to every client, none compressed per client.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import resource
import socket
import time
from collections import OrderedDict
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.http11 import Request

from api.socket_frames import EXTENSION, FrameWriter
from ledger.settings import Settings

PROTOCOL = "api.connection_guard:GuardedProtocol"
WS_PROTOCOL = "api.connection_guard:GuardedWebSocket"
WS_MAX_BYTES = 64 * 1024  # a client's frame beyond this closes its socket (1009)
FD_RESERVE = 256  # descriptors kept for the store, log files, refusal slots and accept bursts
REFUSAL_SLOTS = 64  # connections beyond a cap held at once while their headers arrive
REFUSAL_GRACE_SECONDS = 2.0  # how long such a connection has to send its headers
QUIET_GRACE_SECONDS = 0.25  # a connection that sent nothing yet is a probe's, this long
QUIET_SLOTS = 64  # such connections held beyond the slots for that moment
BEGUN, QUIET, YOUNG, PROBE = range(4)  # the order in which the excess makes way
RETRY_AFTER_SECONDS = 1
HEALTH_PATH = "/health"
HEALTH_PROBE = b"GET /health"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Proxies:
    """The operator's trusted proxies: addresses and networks, or ``*`` for any."""

    def __init__(self, entries: list[str]) -> None:
        self.any = "*" in entries
        self.networks: list[Network] = [
            ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip() != "*"
        ]

    def __contains__(self, address: str) -> bool:
        if self.any:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)


def descriptor_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(settings: Settings, descriptors: int | None = None) -> int:
    """The effective cap on open connections: the setting, within the descriptor limit."""
    fds = descriptor_limit() if descriptors is None else descriptors
    return max(1, min(settings.max_connections, fds - FD_RESERVE))


class Admission:
    """Counts of open, served connections per address and in all, and the refusal slots."""

    def __init__(self, total: int, per_address: int, proxies: Proxies) -> None:
        self.cap, self.per_address_cap, self.proxies = total, per_address, proxies
        self.total = 0
        self.by_address: dict[str, int] = {}
        self.waiting: OrderedDict[GuardedProtocol, None] = OrderedDict()
        self._trim_due = False  # a trim after this pass of accepts
        self._look_due = False  # a trim once the spared quiet connections' grace is over

    def admit(self, address: str) -> bool:
        """Count a new connection from ``address`` in, if it is within both caps."""
        if self.total >= self.cap:
            return False
        held = self.by_address.get(address, 0)
        if held >= self.per_address_cap and address not in self.proxies:
            return False
        self.total += 1
        self.by_address[address] = held + 1
        return True

    def release(self, address: str) -> None:
        self.total -= 1
        left = self.by_address[address] - 1
        if left:
            self.by_address[address] = left
        else:
            del self.by_address[address]

    def hold(self, conn: GuardedProtocol) -> None:
        """A refused connection waits for its headers in a slot. When more wait than
        there are slots, the excess makes way (:meth:`trim`) once the connections
        accepted in this pass of the event loop have all been seen: a burst of accepts
        (an attacker's reconnections, hundreds at once) is accepted before any of them is
        read, and a health probe among them whose request had not reached the socket when
        it was accepted has until then to show it (every one of them is open already, so
        waiting that long holds no descriptor more)."""
        self.waiting[conn] = None
        if len(self.waiting) <= REFUSAL_SLOTS or self._trim_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a unit test): at once
            self.trim()
            return
        self._trim_due = True
        loop.call_soon(self.trim)

    def trim(self) -> None:
        """Drop the connections beyond the slots, in this order (:func:`_rank`): those
        that have sent part of a request that is not a health probe's (a client that
        sends its headers piecemeal is slow on purpose; a probe sends them at once), then
        the oldest that has sent nothing for :data:`QUIET_GRACE_SECONDS`. One that has
        sent nothing for less is dropped only beyond :data:`QUIET_SLOTS` more (a probe's
        request may be a moment behind its connection: the slots are looked at again
        when the moment has passed); a probe whose request is in, last of all."""
        self._trim_due = False
        excess = len(self.waiting) - REFUSAL_SLOTS
        if excess <= 0:
            return
        now = time.monotonic()
        rank = {c: _rank(c, now) for c in self.waiting}  # one look at each
        first = sorted(self.waiting, key=rank.__getitem__)[:excess]  # stable: oldest first
        victims = [c for c in first if rank[c] < YOUNG]
        spared = [c for c in first if rank[c] >= YOUNG]
        victims += spared[: max(0, len(spared) - QUIET_SLOTS)]
        for slow in victims:
            del self.waiting[slow]
            slow.drop()
        if len(self.waiting) > REFUSAL_SLOTS:
            self._look_again()

    def _look_again(self) -> None:
        """Trim again once the young quiet connections spared now have had their grace."""
        if self._look_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a unit test): the next hold trims
            return
        self._look_due = True
        loop.call_later(QUIET_GRACE_SECONDS, self._looked_again)

    def _looked_again(self) -> None:
        self._look_due = False
        self.trim()

    def unhold(self, conn: GuardedProtocol) -> None:
        self.waiting.pop(conn, None)


def admission_from(settings: Settings) -> Admission:
    return Admission(
        connection_cap(settings),
        settings.max_connections_per_address,
        Proxies(settings.trusted_proxies),
    )


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadlines and caps above (one admission per
    process, from the settings in the environment, as every worker reads them)."""

    admission: Admission | None = None
    header_timeout = 10.0
    body_timeout = 30.0

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        if GuardedProtocol.admission is None:
            configure(Settings())
        self.address = ""
        self.admitted = False
        self.refused = False
        self.begun = False  # part of a request has arrived, not yet its whole headers
        self.accepted = time.monotonic()
        self.deadline: asyncio.TimerHandle | None = None

    @property
    def _admission(self) -> Admission:
        assert GuardedProtocol.admission is not None
        return GuardedProtocol.admission

    # Connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        if self._admission.admit(self.address):
            self.admitted = True
            self._arm(self.header_timeout, self._headers_late)
        else:
            self.refused = True
            if not _peek(transport).startswith(HEALTH_PROBE):
                self._admission.hold(self)  # a probe already in is never made to wait
            self._arm(REFUSAL_GRACE_SECONDS, self.drop)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.admitted:
            self.admitted = False
            self._admission.release(self.address)
        self._admission.unhold(self)
        super().connection_lost(exc)

    def _should_upgrade(self) -> bool:
        return not self.refused and super()._should_upgrade()

    def handle_websocket_upgrade(self) -> None:
        """Hand the connection to the WebSocket protocol, which releases its admission
        when it closes (this protocol hears of the transport no more)."""
        self._disarm()
        super().handle_websocket_upgrade()
        upgraded = self.transport.get_protocol()
        if isinstance(upgraded, GuardedWebSocket) and self.admitted:
            self.admitted = False
            upgraded.admitted_address = self.address
        # This protocol is done with the connection, and hears no ``connection_lost``, where
        # uvicorn lets go of the parser: the parser and this protocol hold each other, a
        # cycle a connection for the garbage collector (tests/integration/test_upgrade_garbage.py).
        self.parser = None  # type: ignore[assignment]

    def drop(self) -> None:
        """Close a refused connection that did not send its headers in time."""
        self._disarm()
        self._admission.unhold(self)
        if not self.transport.is_closing():
            self.transport.close()

    # Parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.begun = True
        if self.deadline is None and not self.refused:
            self._arm(self.header_timeout, self._headers_late)

    def on_headers_complete(self) -> None:
        self._disarm()
        self.begun = False
        if not self.refused:
            super().on_headers_complete()
            if not self.parser.should_upgrade():
                self._arm(self.body_timeout, self._body_late)
            return
        self._admission.unhold(self)
        health = self.url.split(b"?", 1)[0] == HEALTH_PATH.encode()
        method = self.parser.get_method()
        if not (health and method in (b"GET", b"HEAD")):
            self.app = refuse  # this connection's only request
        super().on_headers_complete()
        self.cycle.keep_alive = False  # answered once, then closed

    def on_message_complete(self) -> None:
        if not self.refused:
            self._disarm()
        super().on_message_complete()

    # Deadlines

    def _arm(self, seconds: float, then: Any) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _headers_late(self) -> None:
        self.deadline = None
        if self.transport.is_closing():
            return
        # A started request is answered 408; a connection that sent nothing is just
        # closed (a client's unused spare connection: a 408 there could be taken for the
        # answer to a request it sends at that moment).
        if self.begun and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(_status(408, "request-timeout", "headers took too long"))
        self.transport.close()

    def _body_late(self) -> None:
        self.deadline = None
        if not self.transport.is_closing():
            self.transport.close()  # the application's receive() gets http.disconnect


class GuardedWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol holding the admission of the connection it took over
    (:meth:`GuardedProtocol.handle_websocket_upgrade`) until the connection is lost. Its
    per-connection lines ("[accepted]") are not logged: like the streams, a socket is
    not an access-log line each (thousands of players would flood the log); its errors
    are."""

    admitted_address: str | None = None

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.logger = SOCKET_LOG
        self.conn.logger = SOCKET_LOG  # websockets' own "connection open" / "closed" lines

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # the upgrade was accepted: the application runs on it
            scope["extensions"][EXTENSION] = FrameWriter(self)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.admitted_address is not None and GuardedProtocol.admission is not None:
            GuardedProtocol.admission.release(self.admitted_address)
            self.admitted_address = None
        super().connection_lost(exc)


SOCKET_LOG = logging.Logger("croupier.socket.protocol", logging.WARNING)
"""Warnings and errors only. Not from ``logging.getLogger``: the logging configuration
(api/logs.py, applied by uvicorn in each worker) resets every registered child of
``croupier`` to its parent's level, which would log a line per socket again."""
SOCKET_LOG.parent = logging.getLogger("croupier")


def _rank(conn: GuardedProtocol, now: float) -> int:
    """Where ``conn`` stands when the refusal slots are trimmed (lowest goes first): it
    has begun a request that is not a health probe's (read by the parser, or bytes
    waiting in the socket), it has sent nothing for :data:`QUIET_GRACE_SECONDS` or less
    long, or a probe's request has arrived, not read yet (accepted in a burst)."""
    if conn.begun:
        return BEGUN
    transport = getattr(conn, "transport", None)
    head = b"" if transport is None else _peek(transport)
    if head.startswith(HEALTH_PROBE):
        return PROBE
    if head:
        return BEGUN
    return QUIET if now - conn.accepted >= QUIET_GRACE_SECONDS else YOUNG


def _peek(transport: asyncio.BaseTransport) -> bytes:
    """The first bytes already received on a connection, left there to be read; b"" when
    none have arrived (or the socket cannot be peeked at)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return b""
    # A socket object over the same descriptor, detached before it is dropped: no new
    # descriptor is needed (an os.dup here fails with EMFILE exactly when connections
    # have used the descriptors up, and the probe would then look like an attacker).
    try:
        view = socket.socket(fileno=sock.fileno())
    except OSError:
        return b""
    try:
        return view.recv(len(HEALTH_PROBE), socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return b""
    finally:
        view.detach()


def _status(status: int, code: str, message: str, retry_after: int | None = None) -> bytes:
    """A whole JSON error response that closes the connection."""
    if retry_after is not None:
        message = f"{message}; retry after {retry_after} s"
    body = json.dumps({"code": code, "message": message}).encode()
    phrase = {408: "Request Timeout", 503: "Service Unavailable"}[status]
    retry = "" if retry_after is None else f"retry-after: {retry_after}\r\n"
    return (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n{retry}connection: close\r\n\r\n"
    ).encode() + body


async def refuse(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a connection beyond a cap (``Retry-After``, then closed)."""
    raw = _status(503, "too-many-connections", "too many open connections", RETRY_AFTER_SECONDS)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")[1:]
    headers = [(n.lower(), v.strip()) for n, _, v in (line.partition(b":") for line in lines)]
    await send({"type": "http.response.start", "headers": headers, "status": 503})
    await send({"type": "http.response.body", "body": body})


def configure(settings: Settings) -> Admission:
    """Set this process's limits from the settings (each worker does, at its first
    connection)."""
    GuardedProtocol.header_timeout = settings.header_timeout_seconds
    GuardedProtocol.body_timeout = settings.body_timeout_seconds
    GuardedProtocol.admission = admission_from(settings)
    return GuardedProtocol.admission


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The options of ``uvicorn.Config`` / ``uvicorn.run`` that carry these limits, and
    trust proxy headers only from the configured proxies."""
    return {
        "http": PROTOCOL,
        # the table socket: websockets' Sans-I/O core, counted by the guard until closed;
        # no per-message compression (nothing is encoded per client), small frames only
        "ws": WS_PROTOCOL,
        "ws_per_message_deflate": False,
        "ws_max_size": WS_MAX_BYTES,
        "timeout_keep_alive": settings.keep_alive_seconds,
        "proxy_headers": bool(settings.trusted_proxies),
        "forwarded_allow_ips": list(settings.trusted_proxies),
    }
