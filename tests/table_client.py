"""A game client of a live table over HTTP (httpx, asyncio): its own SSE stream, resumed
with ``Last-Event-ID``, and the player's POSTs. Used by the end-to-end test against
``croupier serve`` and by ``bench/bench_table_http.py``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Received:
    id: int | None
    type: str
    data: dict[str, Any]
    at: float
    """``time.time()`` when the client had it."""


def parse_block(block: str, at: float) -> Received | None:
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        name, sep, value = line.partition(": ")
        if sep and name in ("id", "event", "data"):
            fields[name] = value
    if "event" not in fields:
        return None
    position = int(fields["id"]) if "id" in fields else None
    return Received(position, fields["event"], json.loads(fields["data"]), at)


@dataclass
class TableClient:
    base: str
    table: str
    session: str
    token: str
    events: list[Received] = field(default_factory=list)
    last_id: int | None = None
    streams_opened: int = 0
    answer_s: float = 60.0
    """How long a request waits for its answer."""

    def __post_init__(self) -> None:
        self.http = httpx.AsyncClient(
            base_url=self.base,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=httpx.Timeout(self.answer_s, connect=30.0),
            limits=httpx.Limits(max_connections=4),
        )
        self.inbox: asyncio.Queue[Received] = asyncio.Queue()
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- the stream ---------------------------------------------------------------------

    def open(self) -> None:
        self.connected.clear()
        self._task = asyncio.create_task(self._stream())

    async def close_stream(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _stream(self) -> None:
        headers = {} if self.last_id is None else {"Last-Event-ID": str(self.last_id)}
        url = f"/v1/tables/{self.table}/stream"
        async with self.http.stream("GET", url, headers=headers) as r:
            if r.status_code != 200:
                raise AssertionError(f"stream: {r.status_code} {(await r.aread())!r}")
            self.streams_opened += 1
            self.connected.set()
            buffer = ""
            async for text in r.aiter_text():
                buffer += text
                *blocks, buffer = buffer.split("\n\n")
                now = time.time()
                for block in blocks:
                    e = parse_block(block, now)
                    if e is None:
                        continue
                    if e.id is not None:
                        self.last_id = e.id
                    if e.type != "heartbeat":
                        self.events.append(e)
                        self.inbox.put_nowait(e)

    async def next(self, timeout: float = 60.0) -> Received:
        return await asyncio.wait_for(self.inbox.get(), timeout)

    # -- the player's requests ------------------------------------------------------------

    async def post(self, action: str, body: dict[str, Any] | None = None) -> httpx.Response:
        url = f"/v1/sessions/{self.session}/tables/{self.table}/{action}"
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        try:
            return await self.http.post(url, json=body or {}, headers=headers)
        except (httpx.ReadError, httpx.RemoteProtocolError):
            # a kept-alive connection the server had just closed: the same request again
            # (the same Idempotency-Key, so it cannot apply twice)
            return await self.http.post(url, json=body or {}, headers=headers)

    async def aclose(self) -> None:
        await self.close_stream()
        await self.http.aclose()


COMMANDS = {
    "join": "join",
    "leave": "leave",
    "bets": "bet",
    "undo": "undo",
    "undo-all": "undo-all",
    "repeat": "repeat",
    "double": "double",
    "all-side-bets": "all-side-bets",
    "insurance": "insurance",
    "decide": "decide",
}
"""The REST action (the path's last part) -> the socket's command of the same effect."""


@dataclass
class Answered:
    """A command's answer on the socket, shaped as the REST response the callers read."""

    status_code: int
    body: dict[str, Any]
    frame: dict[str, Any]

    def json(self) -> dict[str, Any]:
        return self.body

    @property
    def text(self) -> str:
        return json.dumps(self.frame)


@dataclass
class SocketClient:
    """The same game client over the table WebSocket (``/v1/tables/{table}/ws``): the
    table's messages and the commands on one connection, resumed with ``last_event_id``.
    ``post`` sends the REST action's command with a fresh message id and waits for its
    answer (or sends ``mid`` again: a resend)."""

    base: str
    table: str
    session: str
    token: str
    events: list[Received] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    last_id: int | None = None
    streams_opened: int = 0
    answer_s: float = 60.0
    """How long a command waits for its answer frame."""

    def __post_init__(self) -> None:
        self.inbox: asyncio.Queue[Received] = asyncio.Queue()
        self.connected = asyncio.Event()
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.conn: Any = None
        self.closed_by_server: tuple[int, str] | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        ws = self.base.replace("http://", "ws://", 1)
        after = "" if self.last_id is None else f"?last_event_id={self.last_id}"
        return f"{ws}/v1/tables/{self.table}/ws{after}"

    def open(self) -> None:
        self.connected.clear()
        self._task = asyncio.create_task(self._run())

    async def close_stream(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.connected.clear()

    async def _run(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        headers = {"Authorization": f"Bearer {self.token}"}
        # as the stream's client: a generous handshake time (a thousand players connecting
        # at once queue behind each other's authentication)
        async with connect(
            self.url, additional_headers=headers, max_size=None, open_timeout=60
        ) as conn:
            self.conn = conn
            self.streams_opened += 1
            self.connected.set()
            try:
                async for frame in conn:
                    assert isinstance(frame, str)
                    self.frames.append(frame)
                    now = time.time()
                    for line in frame.split("\n"):
                        self._message(json.loads(line), now)
            except ConnectionClosed:
                pass
            finally:
                self.conn = None
                if conn.close_code is not None:
                    self.closed_by_server = (conn.close_code, conn.close_reason or "")
                for fut in self.waiting.values():
                    if not fut.done():
                        fut.set_exception(ConnectionError("the socket closed"))

    def _message(self, m: dict[str, Any], now: float) -> None:
        if m["type"] in ("answer", "error"):
            fut = self.waiting.pop(str(m.get("ref")), None)
            if fut is not None and not fut.done():
                fut.set_result(m)
            return
        position = m.pop("id")
        if position is not None:
            self.last_id = position
        if m["type"] != "heartbeat":
            e = Received(position, m["type"], m, now)
            self.events.append(e)
            self.inbox.put_nowait(e)

    async def next(self, timeout: float = 60.0) -> Received:
        return await asyncio.wait_for(self.inbox.get(), timeout)

    async def send(self, frame: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one command frame and wait for its answer (or error) frame."""
        timeout = self.answer_s if timeout is None else timeout
        await asyncio.wait_for(self.connected.wait(), timeout)
        mid = str(frame["id"])
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[mid] = fut
        if self.conn is None:  # closed between the wait and now
            raise ConnectionError("the socket closed")
        await self.conn.send(json.dumps(frame))
        return await asyncio.wait_for(fut, timeout)

    async def post(
        self, action: str, body: dict[str, Any] | None = None, mid: str | None = None
    ) -> Answered:
        frame = {"id": mid or uuid.uuid4().hex, "command": COMMANDS[action], **(body or {})}
        for attempt in range(2):
            try:
                got = await self.send(frame)
                break
            except ConnectionError:
                if attempt:  # the socket went twice: the caller sees it
                    raise
                # the socket went before the answer: the same id again once it is back,
                # so the command cannot apply twice
                await asyncio.wait_for(self.connected.wait(), 60)
        if got["type"] == "answer":
            return Answered(200, got["result"], got)
        body = {k: v for k, v in got.items() if k not in ("type", "ref", "status")}
        return Answered(int(got["status"]), body, got)

    async def aclose(self) -> None:
        await self.close_stream()
