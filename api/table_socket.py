"""``GET /v1/tables/{table}/ws``: a live table over one WebSocket, both directions (issue 28).

The player's one connection carries what the SSE stream carries (:mod:`api.table_stream`:
the same messages, the same ids, resumed after ``Last-Event-ID`` / ``?last_event_id=``,
the same bounded queue: a client that does not read fast enough is closed with 1013 and
resumes) and the player's commands, each answered on the socket. The message protocol is
docs/guides/table-websocket.md.

- **Authentication** as the stream: ``Authorization: Bearer`` or, for a browser's
  ``WebSocket`` (no headers), ``?access_token=``; a refusal before the upgrade is the
  REST answer (401, 403, 404, 422, 429 with its JSON body), never an accepted socket.
- **Commands** (:class:`ClientCommand`) run the same ledger commands as the REST routes
  (:func:`ledger_command`) for the token's own session only (a command names no session),
  with the closed-session check of the REST game actions, through the table's intake
  (:mod:`api.table_intake`): the commands of every player at the table that arrive
  together are applied in one batch, one transaction. Each carries ``id``, its
  idempotency key (the REST ``Idempotency-Key``): the same id again gets the first answer
  and changes nothing (also after a reconnect or a restart: the ledger's request record);
  the same id with another body gets ``idempotency-conflict``.
- **Limits**: the stream's (per session, per address, per process), the session's command
  rate (shared with its REST commands: ``session_commands_per_second``, burst twice), the
  connection guard's per-address and total connection caps (:mod:`api.connection_guard`
  counts an upgraded connection until it closes).
- **Server frames**: one or more JSON objects, one per line (JSON Lines). A table message
  is encoded once for every client (:class:`api.table_feed.Encoded`); an answer is the
  client's own.

Protocol library: uvicorn's ``websockets-sansio`` implementation (the ``websockets``
package's Sans-I/O core; per-message compression off, so nothing is compressed per
client), see :func:`api.connection_guard.uvicorn_options`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import deque
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
from anyio import to_thread
from eventsourcing.persistence import InterfaceError, OperationalError
from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState
from uvicorn.protocols.utils import ClientDisconnected

from api import auth, table_intake
from api import tables as rest
from api.errors import ApiError, game_status, ledger_status
from api.limits import Buckets
from api.socket_frames import frame_writer
from api.table_feed import Encoded, Subscriber, TableFeed, replay_pages
from api.table_schemas import TABLE_PATTERN, BetType, SeatChanged, StepDecision
from api.table_stream import TableStreams, Viewer, stream_caller, streams_of, viewer_of
from games.errors import GameRuleError
from ledger.casino import Casino
from ledger.errors import LedgerError
from ledger.requests import MAX_REQUEST_ID
from ledger.tables import commands as tc
from ledger.unit_of_work import UnitOfWork

log = logging.getLogger("croupier.socket")
router = APIRouter(prefix="/v1", tags=["tables"])

CLOSE_SLOW = 1013
"""Close code of a client whose queue overflowed ("try again later"): it resumes."""
CLOSE_RESTART = 1012
"""Close code when the server shuts down ("service restart"): it resumes elsewhere."""
MAX_FRAME = 16 * 1024
"""A client frame beyond this is refused (a command is a few hundred bytes)."""


# -- client -> server ---------------------------------------------------------------------


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(
        min_length=1,
        max_length=MAX_REQUEST_ID,
        description="the client's message id: the command's idempotency key",
    )


class Join(_Command):
    command: Literal["join"]


class Leave(_Command):
    command: Literal["leave"]


class Bet(_Command):
    command: Literal["bet"]
    bet: BetType
    amount: int = Field(strict=True, gt=0, le=10**12)


class Undo(_Command):
    command: Literal["undo"]


class UndoAll(_Command):
    command: Literal["undo-all"]


class Repeat(_Command):
    command: Literal["repeat"]


class Double(_Command):
    command: Literal["double"]


class AllSideBets(_Command):
    command: Literal["all-side-bets"]


class Insurance(_Command):
    command: Literal["insurance"]
    take: bool = Field(strict=True)


class Decide(_Command):
    command: Literal["decide"]
    step: int = Field(strict=True, ge=1, le=100)
    decision: StepDecision


ClientCommand = Annotated[
    Join | Leave | Bet | Undo | UndoAll | Repeat | Double | AllSideBets | Insurance | Decide,
    Field(discriminator="command"),
]
COMMANDS: TypeAdapter[ClientCommand] = TypeAdapter(ClientCommand)


def ledger_command(msg: ClientCommand, session: str, table: str) -> tc.TableCommand[Any]:
    """The ledger command the REST route of the same name runs (api/tables.py)."""
    match msg:
        case Join():
            return tc.Connect(session, table)
        case Leave():
            return tc.Disconnect(session, table)
        case Bet(bet=bet, amount=amount):
            return tc.PlaceBet(session, table, bet, amount)
        case Undo():
            return tc.UndoBet(session, table)
        case UndoAll():
            return tc.UndoBet(session, table, everything=True)
        case Repeat():
            return tc.RepeatBets(session, table)
        case Double():
            return tc.DoubleBets(session, table)
        case AllSideBets():
            return tc.AllSideBets(session, table)
        case Insurance(take=take):
            return tc.TableDecide(session, table, 0, "insure" if take else "no-insurance")
        case Decide(step=step, decision=decision):
            return tc.TableDecide(session, table, step, decision)


# -- server -> client (besides the table's messages) ------------------------------------------


class Answer(BaseModel):
    """A command's result: what the REST route answers (``SeatChanged``)."""

    type: Literal["answer"] = "answer"
    ref: str = Field(description="the command's id")
    result: SeatChanged


class Refusal(BaseModel):
    """A command refused, or a frame that is no command: the REST error's status, code and
    message (and the ids it names); nothing changed."""

    model_config = ConfigDict(extra="allow")
    type: Literal["error"] = "error"
    ref: str | None = Field(description="the command's id (null: none could be read)")
    status: int
    code: str
    message: str
    retry_after: int | None = None


def refusal(ref: str | None, exc: Exception) -> Refusal:
    """The REST answer to ``exc`` (api/errors.py), as a frame."""
    ids: dict[str, Any] = {}
    retry: int | None = None
    if isinstance(exc, LedgerError):
        status, code, message = ledger_status(exc), exc.code, exc.message
        ids = {("game_code" if k == "code" else k): v for k, v in exc.ids.items()}
        retry = getattr(exc, "retry_after", None)
    elif isinstance(exc, GameRuleError):
        status, code, message = game_status(exc), exc.code, exc.message
    elif isinstance(exc, ApiError):
        status, code, message, ids = exc.status, exc.code, exc.message, dict(exc.ids)
    elif isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        summary = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
        status, code, message = 422, "invalid-request", summary or "invalid command"
    elif isinstance(exc, OperationalError | InterfaceError):
        status, code, retry = 503, "storage-unavailable", 1
        message = "the store did not answer; nothing was written, retry later"
    else:
        log.error("table socket: unexpected %r", exc, exc_info=exc)
        status, code, message = 500, "internal-error", "internal server error"
    ids.pop("message", None)
    ids.pop("status", None)
    return Refusal(ref=ref, status=status, code=code, message=message, retry_after=retry, **ids)


def _ref_of(text: str) -> str | None:
    """The ``id`` of a frame that is not a valid command, if it has a readable one."""
    try:
        value = TypeAdapter(dict[str, Any]).validate_json(text).get("id")
    except ValidationError:
        return None
    return value if isinstance(value, str) and 0 < len(value) <= MAX_REQUEST_ID else None


# -- the connection -------------------------------------------------------------------------


class Player:
    """One socket: the feed's queue out, the commands in; every frame goes out through
    :meth:`_writer` (one writer per socket), answers first."""

    def __init__(
        self,
        ws: WebSocket,
        streams: TableStreams,
        feed: TableFeed,
        viewer: Viewer,
        after: int,
        commands: Buckets | None,
        check: Callable[[UnitOfWork], None],
    ) -> None:
        self.ws, self.streams, self.feed, self.viewer, self.after = ws, streams, feed, viewer, after
        self.commands = commands
        self.check = check
        self.app: Casino = streams.app
        self.sub = Subscriber(
            feed.table,
            viewer.key,
            streams.settings.stream_queue_messages,
            0.0,
            viewer.chat,
            viewer.settings_id,
        )
        self.news = asyncio.Event()
        self.frames = frame_writer(ws.scope)
        self.busy = True
        """The writer task is catching up or sending: news waits for it."""
        self.sub.wake = self._wake
        self.answers: deque[str] = deque()

    async def run(self) -> None:
        """Until the client goes (the reader sees it; a send to a gone client ends the
        writer) or the server ends the socket."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._reader, tg.cancel_scope)
            with contextlib.suppress(WebSocketDisconnect, ClientDisconnected, OSError):
                await self._catch_up()
                await self._writer()
            tg.cancel_scope.cancel()

    async def _catch_up(self) -> None:
        after = self.after
        while not await to_thread.run_sync(self.feed.subscribe, self.sub, after):
            upto = self.feed.buffer_start
            pages = replay_pages(self.app, self.feed.table, self.viewer.key, after, upto)
            while True:
                page: list[Encoded] | None = await to_thread.run_sync(_next, pages)
                if page is None:
                    break
                kept = [e for e in page if self.sub.chat or not e.chat]
                if kept:
                    await self.ws.send_text("\n".join(e.line for e in kept))
            after = upto
        self.news.set()

    def _wake(self) -> None:
        """The feed has news for this socket (called on the event loop's thread, for every
        socket a poll reached). When nothing else is being sent on the socket, its queued
        messages are written here and now, each as the frame serialized once for every
        socket (api/socket_frames.py): no task wakes. Otherwise (an answer waiting, the
        writer busy, the client's buffer full, the queue dropped, the server closing) the
        writer task sends them, as it sends everything else."""
        frames = self.frames
        if (
            frames is None
            or self.busy
            or self.answers
            or self.sub.dropped
            or self.streams.closing
            or not frames.ready()
        ):
            self.news.set()
            return
        items = self.sub.take()
        if items:
            frames.write(b"".join([e.frame for e in items]))

    async def _writer(self) -> None:
        """Send answers and queued messages as they come; end when the client is dropped
        (its queue overflowed) or the server closes."""
        while True:
            self.busy = False
            await self.news.wait()
            self.busy = True
            self.news.clear()
            lines = [*self._take_answers(), *(e.line for e in self.sub.take())]
            if lines:
                await self.ws.send_text("\n".join(lines))
            if self.sub.dropped:
                await self.ws.close(CLOSE_SLOW, "slow-client: resume with last_event_id")
                return
            if self.streams.closing:
                await self.ws.close(CLOSE_RESTART, "server restart: resume with last_event_id")
                return

    def _take_answers(self) -> list[str]:
        out = []
        while self.answers:
            out.append(self.answers.popleft())
        return out

    def _answer(self, frame: Answer | Refusal) -> None:
        self.answers.append(frame.model_dump_json(exclude_none=True))
        self.news.set()

    async def _reader(self, scope: anyio.CancelScope) -> None:
        with contextlib.suppress(WebSocketDisconnect, ClientDisconnected):
            await self._read()
        scope.cancel()

    async def _read(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                return  # the client went
            text = message.get("text")
            if text is None:
                binary = ApiError(422, "invalid-request", "a command is a JSON text frame")
                self._answer(refusal(None, binary))
                continue
            self._answer(await self._command(text))

    async def _command(self, text: str) -> Answer | Refusal:
        if len(text) > MAX_FRAME:
            return refusal(None, ApiError(413, "payload-too-large", "a command frame is small"))
        try:
            msg = COMMANDS.validate_json(text)
        except ValidationError as e:
            return refusal(_ref_of(text), e)
        if not self.viewer.seated:
            denied = ApiError(403, "forbidden", "a spectator token has no seat to act for")
            return refusal(msg.id, denied)
        wait = 0.0 if self.commands is None else self.commands.take(self.viewer.key)
        if wait:
            too_many = ApiError(429, "too-many-commands", "too many commands in this session")
            answer = refusal(msg.id, too_many)
            answer.retry_after = max(1, int(-(-wait // 1)))
            return answer
        cmd = ledger_command(msg, self.viewer.key, self.feed.table)
        try:
            result = await table_intake.run(self.ws.app.state, self.app, msg.id, cmd, self.check)
        except Exception as e:  # every failure is a typed answer; the socket goes on
            return refusal(msg.id, e)
        return Answer(ref=msg.id, result=rest.seat_changed(cmd.table, result))


def _next(pages: Any) -> list[Encoded] | None:
    return next(pages, None)


def _deny(exc: Exception) -> JSONResponse:
    """The REST error response to a refused handshake (status and JSON body)."""
    refused = refusal(None, exc)
    body = refused.model_dump(exclude_none=True, exclude={"type", "ref", "status"})
    headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
    if refused.retry_after is not None:
        headers = {"Retry-After": str(refused.retry_after)}
    return JSONResponse(body, status_code=refused.status, headers=headers)


@router.websocket("/tables/{table}/ws")
async def table_socket(ws: WebSocket, table: str) -> None:
    """The table's live messages and this session's own, and its commands, on one socket
    (docs/guides/table-websocket.md)."""
    address = ws.client.host if ws.client else ""
    try:
        if not re.fullmatch(TABLE_PATTERN, table):
            raise ApiError(422, "invalid-request", "a table id is 1-40 letters, digits, . _ -")
        streams = streams_of(ws)
        # one trip to a worker thread for every read the handshake needs
        feed, viewer, position = await to_thread.run_sync(_handshake, ws, streams, table)
        streams.admit(viewer.key, address)
    except Exception as e:  # answered as REST answers it; no socket is opened
        await ws.send_denial_response(_deny(e))
        return
    check = _closed_check(ws, viewer)
    commands: Buckets | None = getattr(ws.app.state, "session_commands", None)
    start = feed.round_start if position is None else position
    player = Player(ws, streams, feed, viewer, start, commands, check)
    if viewer.seated:
        streams.connections.opened(viewer.key, table)
    try:
        await ws.accept()
        await player.run()
    except (WebSocketDisconnect, OSError):
        pass  # the client went: its queue is dropped below, its seat released after the grace
    finally:
        feed.unsubscribe(player.sub)
        streams.release(viewer.key, address)
        if viewer.seated:
            streams.connections.closed(viewer.key, table)
        if ws.application_state is WebSocketState.CONNECTED:
            with contextlib.suppress(
                RuntimeError, OSError, WebSocketDisconnect, ClientDisconnected
            ):
                await ws.close()


def _handshake(
    ws: WebSocket, streams: TableStreams, table: str
) -> tuple[TableFeed, Viewer, int | None]:
    """Who is connecting, to which table's feed, from where (every check of the stream's
    handshake, in its order)."""
    caller = stream_caller(ws, table)
    position = _position(ws)
    feed = streams.feed(table)
    if position is not None and position > _log_top(streams.app):
        raise ApiError(422, "invalid-request", f"last_event_id {position} is beyond the log")
    return feed, viewer_of(streams.app, caller), position


def _closed_check(ws: WebSocket, viewer: Viewer) -> Callable[[UnitOfWork], None]:
    """The REST game actions' closed-session check (api.auth), run inside each command."""
    from uuid import UUID

    from eventsourcing.domain import Aggregate

    credentials: auth.Credentials = ws.app.state.credentials
    sid = UUID(viewer.key) if viewer.seated else None

    def check(uow: UnitOfWork) -> None:
        if sid is not None:
            auth._refuse_if_closed(credentials, uow.get(Aggregate, sid))

    return check


def _position(ws: WebSocket) -> int | None:
    text = ws.headers.get("last-event-id")
    if text is None:
        text = ws.query_params.get("last_event_id")
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit() or len(text) > 15:
        raise ApiError(422, "invalid-request", "last_event_id must be a log position (an integer)")
    return int(text)


def _log_top(app: Casino) -> int:
    return int(app.recorder.max_notification_id() or 0)
