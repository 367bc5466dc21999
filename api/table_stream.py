"""``GET /v1/tables/{table}/stream``: a live table as Server-Sent Events (issue 10).

Authenticated by the session token: ``Authorization: Bearer`` (any HTTP client), or, for a
browser's ``EventSource``, which cannot set headers, ``?access_token=`` (RFC 6750 §2.3,
on this route only). The stream carries every table message and the session's own seat
messages (:mod:`api.table_messages`), each with its log position as ``id``; reconnecting
with ``Last-Event-ID`` (or ``?last_event_id=``) resumes exactly after it. Without one a
stream starts at the current round's opening.

Opening a stream connects the session's seat, losing it disconnects it after the grace
(:mod:`api.table_connections`). A spectator token (:mod:`api.auth`) streams the table's
messages only: no seat's, no balance, no options; it connects nothing, and counts toward
``streams_per_session`` (per token), ``streams_per_address`` and ``max_streams`` like a
session. The table chat goes only to clients whose player shows it (``show_chat``,
followed live).

One thread per process polls every table's feed, woken at once by the ledger's commits:
this process's own, and on PostgreSQL every other process's too (the insert's ``NOTIFY``,
:mod:`ledger.commit_listener`); every ``stream_poll_seconds`` it looks anyway. The
streams wait on the event loop, so a thousand cost no threads.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
from anyio import to_thread
from fastapi import APIRouter, Header, Path, Query, Request
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from api import auth
from api.common import ERRORS
from api.errors import ApiError
from api.table_connections import Connections, Presence
from api.table_feed import Subscriber, TableFeed, replay
from api.table_schemas import TABLE_PATTERN
from ledger import entropy
from ledger.casino import Casino
from ledger.commit_listener import CommitListener
from ledger.player_settings import settings_id_for, settings_of
from ledger.presence import HoldTable, ReleaseTable
from ledger.settings import Settings
from ledger.tables.aggregates import Table, table_id_for

log = logging.getLogger("croupier.stream")
router = APIRouter(prefix="/v1", tags=["tables"], responses=ERRORS)
RETRY_MS = 1000
"""The reconnection delay the stream asks of an ``EventSource`` (well inside the grace)."""


class TableStreams:
    """Every table's feed in this process, the streams' limits and the connection rule."""

    def __init__(
        self,
        app: Casino,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        submit: Callable[[Callable[[], None]], object] | None = None,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.app = app
        self.settings = settings
        self.clock = clock
        self.feeds: dict[str, TableFeed] = {}
        self.lock = threading.Lock()
        self.sessions: dict[str, int] = {}
        self.addresses: dict[str, int] = {}
        self.total = 0
        self._pool: ThreadPoolExecutor | None = None
        soon = None
        if submit is None:  # the server: connection commands join the writer's batches
            self._pool = ThreadPoolExecutor(4, thread_name_prefix="croupier-connect")
            submit = self._pool.submit
            soon = self._send_soon
        grace = settings.stream_grace_seconds
        self.connections = Connections(self._send, grace, clock, submit, soon)
        self.wall = wall
        self.worker = uuid.uuid4().hex
        """This process's id in the presence the store keeps (ledger.presence)."""
        self.presence = Presence(
            app, self.worker, lambda: bool(self.connections.connected), wall, clock, submit
        )
        self.waker: Callable[[list[Subscriber]], None] = lambda subs: None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listener = CommitListener(app.recorder, self._wake.set, "croupier-table-listen")
        """Wakes the feeds when another process commits (PostgreSQL); polling otherwise."""
        self.closing = False
        """Set when the server shuts down: every stream ends its response cleanly."""

    def _send(self, session: str, table: str, connected: bool) -> None:
        """This process holds (or no longer holds) a connection of the session to the
        table: the store decides whether the seat is connected (ledger.presence)."""
        self.app.command(*self._presence(session, table, connected))

    def _send_soon(
        self, session: str, table: str, connected: bool, done: Callable[[], None]
    ) -> bool:
        """:meth:`_send` queued for the writer's next batch; ``done`` once durable. A
        py-spy profile of a 10,000-player round had 19 % of the server's samples in these
        commands, each written in a batch of four (one per pool thread waiting for it)."""

        def answered(p: Any) -> None:  # on the writer's thread: nothing may escape
            try:
                if p.error is not None:
                    log.warning(
                        "table %s session %s: connected=%s failed: %r",
                        table,
                        session,
                        connected,
                        p.error,
                    )
                done()
            except Exception as e:
                what = "table %s session %s: after connected=%s: %r"
                log.error(what, table, session, connected, e)

        return self.app.command_soon(*self._presence(session, table, connected), answered)

    def _presence(
        self, session: str, table: str, connected: bool
    ) -> tuple[str, HoldTable | ReleaseTable]:
        at = self.wall().isoformat(timespec="milliseconds")
        cmd: HoldTable | ReleaseTable = (
            HoldTable(session, table, self.worker, at)
            if connected
            else ReleaseTable(session, table, self.worker, at)
        )
        verb = "hold" if connected else "release"
        return f"stream-{verb}-{entropy.uuid4().hex}", cmd

    # -- feeds ------------------------------------------------------------------------------

    def feed(self, table: str) -> TableFeed:
        with self.lock:
            feed = self.feeds.get(table)
        if feed is not None:
            return feed
        if self.app.find(Table, table_id_for(table)) is None:
            raise ApiError(404, "table-not-found", f"no blackjack table {table!r}", table=table)
        made = TableFeed(self.app, table, self.clock, self.settings.stream_heartbeat_seconds)
        with self.lock:
            return self.feeds.setdefault(table, made)

    def tick(self) -> None:
        """Send the disconnects that are due (and this process's beat, the releases of
        killed processes' holds), then poll every feed once and wake the streams that
        got something."""
        self.connections.due()
        self.presence.tick()
        with self.lock:
            feeds = list(self.feeds.values())
        for feed in feeds:
            woken = feed.poll(self.waker)
            if woken:
                self.waker(woken)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, waker: Callable[[list[Subscriber]], None]) -> None:
        if self._thread is not None:
            return
        self.waker = waker
        self.app.commit_observers.append(self._committed)
        self._thread = threading.Thread(target=self._run, name="croupier-table-feed", daemon=True)
        self._thread.start()
        self.listener.start()

    def _committed(self, position: int) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.settings.stream_poll_seconds)
            self._wake.clear()
            try:
                self.tick()
            except Exception as e:  # a failed read is retried at the next tick
                log.error("table feed: %r", e, exc_info=e)

    def close_streams(self) -> None:
        """End every open stream now, each with a complete response (shutdown: the client
        sees the stream end and reconnects with ``Last-Event-ID``); thread-safe."""
        self.closing = True
        with self.lock:
            feeds = list(self.feeds.values())
        subs: list[Subscriber] = []
        for feed in feeds:
            with feed.lock:
                subs += [s for group in feed.subscribers.values() for s in group]
        self.waker(subs)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.listener.stop()
        if self._committed in self.app.commit_observers:
            self.app.commit_observers.remove(self._committed)
        if self._thread is not None:
            self._thread.join(5)
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # -- streams ----------------------------------------------------------------------------

    def admit(self, session: str, address: str = "") -> None:
        """Count a new stream, or refuse it: a session has at most
        ``streams_per_session`` streams open, a client address ``streams_per_address``
        (sessions and spectators together), the process ``max_streams``."""
        with self.lock:
            if self.sessions.get(session, 0) >= self.settings.streams_per_session:
                raise ApiError(
                    429,
                    "too-many-streams",
                    f"this session has {self.settings.streams_per_session} streams open already",
                    session_id=session,
                )
            if self.addresses.get(address, 0) >= self.settings.streams_per_address:
                raise ApiError(
                    429,
                    "too-many-streams",
                    f"this address has {self.settings.streams_per_address} streams open already",
                )
            if self.total >= self.settings.max_streams:
                raise ApiError(503, "too-many-streams", "the server has no stream free; retry")
            self.sessions[session] = self.sessions.get(session, 0) + 1
            self.addresses[address] = self.addresses.get(address, 0) + 1
            self.total += 1

    def release(self, session: str, address: str = "") -> None:
        with self.lock:
            for counts, key in ((self.sessions, session), (self.addresses, address)):
                left = counts.get(key, 0) - 1
                if left > 0:
                    counts[key] = left
                else:
                    counts.pop(key, None)
            self.total -= 1


def streams_of(request: HTTPConnection) -> TableStreams:
    """The app's streams, made on the first stream request (the Casino may be the
    caller's or the app's own) and stopped with the app."""
    state = request.app.state
    streams: TableStreams | None = getattr(state, "table_streams", None)
    if streams is None or streams.app is not state.casino:
        streams = TableStreams(state.casino, state.settings)
        state.table_streams = streams
    if not streams.started:
        loop = asyncio.get_running_loop()

        def wake(subs: list[Subscriber]) -> None:
            loop.call_soon_threadsafe(_wake_all, subs)

        streams.start(wake)
    return streams


def _wake_all(subs: list[Subscriber]) -> None:
    for sub in subs:
        sub.wake()


def stream_caller(request: HTTPConnection, table: str) -> auth.Caller:
    """The session (or the spectator of ``table``) of the bearer token, from the header
    or ``access_token`` (the stream's request, or a WebSocket's handshake)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        token = request.query_params.get("access_token", "")
    credentials: auth.Credentials = request.app.state.credentials
    caller = credentials.identify(token.strip()) if token.strip() else None
    if caller is None:
        raise ApiError(401, "unauthenticated", "a session token is required")
    if caller.role is auth.Role.SPECTATOR:
        if caller.table != table:
            raise ApiError(403, "forbidden", "this spectator token is for another table")
        return caller
    if caller.role is not auth.Role.SESSION:
        raise ApiError(403, "forbidden", f"the {caller.role} credential has no seat to stream")
    return _open_session(request, caller)


def _open_session(conn: HTTPConnection, caller: auth.Caller) -> auth.Caller:
    """:func:`api.auth._open_session` for any HTTP connection (a request or a socket's
    handshake): a session closed longer than the grace is refused."""
    from eventsourcing.application import AggregateNotFoundError

    assert caller.session_id is not None
    try:
        session = conn.app.state.casino.repository.get(
            uuid.UUID(caller.session_id), deepcopy_from_cache=False
        )
    except AggregateNotFoundError:
        return caller  # viewer_of answers 404 (session-not-found)
    auth._refuse_if_closed(conn.app.state.credentials, session)
    return caller


def _position(header: str | None, query: int | None) -> int | None:
    if header is None:
        return query
    text = header.strip()
    if not text.isdigit() or len(text) > 15:
        raise ApiError(422, "invalid-request", "Last-Event-ID must be a log position (an integer)")
    return int(text)


def _log_top(app: Casino) -> int:
    return int(app.recorder.max_notification_id() or 0)


class EventStream(Response):
    """The SSE response: catch-up, then live messages; ends when the client goes, or
    when its queue overflowed (the client reconnects with ``Last-Event-ID``)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        streams: TableStreams,
        feed: TableFeed,
        session: str,
        after: int,
        viewer: Viewer,
        address: str = "",
    ) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # proxies must not buffer the stream
        ]
        self.streams, self.feed, self.session, self.after = streams, feed, session, after
        self.viewer = viewer
        self.address = address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streams, feed, session = self.streams, self.feed, self.session
        viewer = self.viewer
        limit = streams.settings.stream_queue_messages
        sub = Subscriber(feed.table, session, limit, 0.0, viewer.chat, viewer.settings_id)
        news = asyncio.Event()
        sub.wake = news.set
        if viewer.seated:  # a spectator has no seat to connect
            streams.connections.opened(session, feed.table)
        ended = False  # by the server (overflow, shutdown), not by the client leaving
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await send(_body(f"retry: {RETRY_MS}\n\n".encode()))
            async with anyio.create_task_group() as tg:
                tg.start_soon(_until_disconnect, receive, tg.cancel_scope)
                await self._catch_up(sub, send)
                while not sub.dropped and not streams.closing:
                    await news.wait()
                    news.clear()
                    chunk = sub.drain()
                    if chunk:
                        await send(_body(chunk))
                tg.cancel_scope.cancel()
                ended = True
            if ended:  # a complete response: the client sees the end, not a broken transfer
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            feed.unsubscribe(sub)
            streams.release(session, self.address)
            if viewer.seated:
                streams.connections.closed(session, feed.table)

    async def _catch_up(self, sub: Subscriber, send: Send) -> None:
        """Replay the log while the stream is behind the feed's buffer, then subscribe."""
        after = self.after
        while not await to_thread.run_sync(self.feed.subscribe, sub, after):
            upto = self.feed.buffer_start
            pages = replay(self.feed.app, self.feed.table, self.session, after, upto, sub.chat)
            while True:
                chunk: bytes | None = await to_thread.run_sync(_next_page, pages)
                if chunk is None:
                    break
                if chunk:
                    await send(_body(chunk))
            after = upto
        first = sub.drain()
        if first:
            await send(_body(first))


def _next_page(pages: Iterator[bytes]) -> bytes | None:
    return next(pages, None)


def _body(chunk: bytes) -> dict[str, Any]:
    return {"type": "http.response.body", "body": chunk, "more_body": True}


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


@router.get(
    "/tables/{table}/stream",
    responses={200: {"content": {"text/event-stream": {}}, "description": "the live stream"}},
)
async def table_stream(
    request: Request,
    table: Annotated[str, Path(pattern=TABLE_PATTERN, max_length=40)],
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(alias="last_event_id", ge=0)] = None,
    access_token: Annotated[
        str | None, Query(description="the session token, for an EventSource (no headers)")
    ] = None,
) -> Response:
    """The table's live messages and this session's own (Server-Sent Events); each
    ``id`` is a log position, ``Last-Event-ID`` resumes after it."""
    caller = await to_thread.run_sync(stream_caller, request, table)
    position = _position(last_event_id, after)
    streams = streams_of(request)
    feed = await to_thread.run_sync(streams.feed, table)
    top = await to_thread.run_sync(_log_top, streams.app)
    if position is not None and position > top:
        raise ApiError(422, "invalid-request", f"Last-Event-ID {position} is beyond the log")
    viewer = await to_thread.run_sync(viewer_of, streams.app, caller)
    address = request.client.host if request.client else ""
    streams.admit(viewer.key, address)
    start = feed.round_start if position is None else position
    return EventStream(streams, feed, viewer.key, start, viewer, address)


@dataclass(frozen=True)
class Viewer:
    """Who a stream is for: a session's seat, or a spectator (no seat: it gets the table's
    messages only, never a seat's or a balance, and connects no seat)."""

    key: str
    """The session id, or ``spectator:{token id}``: what the limits count and the feed
    keys its subscribers by (a spectator's key is never a seat's session)."""
    seated: bool
    chat: bool
    settings_id: str | None


def viewer_of(app: Casino, caller: auth.Caller) -> Viewer:
    if caller.role is auth.Role.SPECTATOR:
        return Viewer(f"spectator:{caller.watcher}", False, True, None)
    assert caller.session_id is not None
    player = app.get_session(caller.session_id).player_id
    show = bool(settings_of(app, player)["show_chat"])
    return Viewer(caller.session_id, True, show, str(settings_id_for(player)))
