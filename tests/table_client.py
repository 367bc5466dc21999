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

    def __post_init__(self) -> None:
        self.http = httpx.AsyncClient(
            base_url=self.base,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=httpx.Timeout(60.0, connect=30.0),
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
