"""One HTTP address in front of every cell: each request goes to its cell's own croupier
API (``api.app.create_app`` on that cell's Casino), chosen without a lookup where the
request names its cell or its player:

1. ``/cells/{cell}/…``: that cell (the path after the prefix); any route of the API;
2. the header ``X-Croupier-Cell: {cell}`` (every routed response carries it);
3. a session token names its cell (``{cell}~…``, :mod:`cells.tokens`);
4. ``/v1/accounts/{player}…``, and the body's ``player_id`` of ``POST /v1/accounts`` and
   ``POST /v1/sessions``: the player's cell by the map's rule (:meth:`CellMap.cell_for`);
5. a live table lives in the cell its id is placed in (the same rule): ``POST
   /v1/tables`` goes to the cell of the body's ``table`` (an explicitly named other cell
   is refused, 403 ``table-in-other-cell``), ``/v1/tables/{table}…`` and
   ``/v1/audit/tables/{table}…`` to the table's cell, the stream and the WebSocket
   included (the socket's ``access_token`` query names its cell as the header does);
6. ``/v1/sessions/{id}…`` (the operator's token, no header), ``/v1/rounds/{code}…``,
   ``/rounds/{code}``, ``/v1/audit/rounds/{code}…``, ``/v1/table-rounds/{code}…``,
   ``/v1/audit/table-rounds/{code}…``: asked of each cell in turn until one does not
   answer 404 (a 404 changes nothing, so a void or a close reaches only the cell that
   holds its round or session);
7. the rest of ``/v1/audit/…`` (checkpoints, proofs, events, keys) belongs to one log:
   without a cell it is refused (400 ``cell-required``);
8. anything else (``/v1/games``, ``/v1/currencies``, ``/openapi.json``, ``/docs``) is the
   same in every cell: the first cell answers (``GET /v1/tables`` and ``/v1/games`` list
   every cell's tables, :mod:`api.table_catalogue`).

A session plays at the tables of its own cell: a session token at a table of another
cell (its seat routes, the stream, the WebSocket, any ``/v1/tables/{table}/…``) is
refused here, before any cell runs, with 403 ``table-in-other-cell`` naming the table's
cell (on the WebSocket, the same answer as the handshake's denial). A table whose
players come from every cell is the next step (docs/concepts/live-tables.md).

Spanning the cells: ``GET /health`` (every cell's store and checkpoint age, the failing
cells named: :mod:`api.health`),
``GET /v1/cells`` (operator or auditor: the cells with their logs and newest heads) and
``GET /v1/cells/index`` (auditor: the latest signed index of the cells' tree heads).
A session token sent with another cell's prefix or header is refused (403 ``wrong-cell``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from anyio import to_thread
from fastapi import FastAPI

from api.app import create_app
from api.auth import Credentials, Role
from api.health import cells_health
from api.metrics import Sampler
from api.table_runners import DEFAULT_TABLE, TableRunners, ensure_default_table
from cells.deployment import Cells
from cells.tokens import for_cell, token_cell
from ledger import gc_policy
from ledger.contracts import SignificantKind
from ledger.settings import Settings
from ledger.significant import server_event

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CELL_HEADER = b"x-croupier-cell"
_PREFIX = re.compile(r"^/cells/([^/]+)(/.*)$")
_ACCOUNT = re.compile(r"^/v1/accounts/([^/]+)")
_BY_PLAYER_BODY = ("/v1/accounts", "/v1/sessions")
_ASK_EACH = (
    "/v1/sessions/",
    "/v1/rounds/",
    "/rounds/",
    "/v1/audit/rounds/",
    "/v1/table-rounds/",
    "/v1/audit/table-rounds/",
)
_TABLE = re.compile(r"^/v1/(?:audit/)?tables/([^/]+)(/.*)?$")
"""A path under one table (its row, operator routes, stream, socket, chat, shoes)."""
_SEAT = re.compile(r"^/v1/sessions/[^/]+/tables/([^/]+)")
"""A session's seat at a table (state, join, bets, decisions, chat)."""
_QUERY_TOKEN = re.compile(r"^/v1/tables/[^/]+/(?:stream|ws)$")
"""The routes that take the session token as ``?access_token=`` (a browser's
``EventSource`` and ``WebSocket`` set no headers)."""


class CellRouter:
    """The ASGI application of ``croupier serve --cells``. Given open :class:`Cells`, it
    leaves their lifecycle to the caller (tests); given a function that opens them, it
    opens them on start-up, runs their sealer and closes them on shutdown."""

    def __init__(
        self,
        cells: Cells | Callable[[], Cells],
        settings: Settings,
        credentials: Credentials,
    ) -> None:
        self.settings = settings
        self.credentials = credentials
        self.cells: Cells | None = None
        self.apps: dict[str, FastAPI] = {}
        self.sampler: Sampler | None = None
        self.runners: dict[str, TableRunners] = {}
        self._open = None if isinstance(cells, Cells) else cells
        if isinstance(cells, Cells):
            self._attach(cells)

    def _attach(self, cells: Cells) -> None:
        self.cells = cells
        self.apps = {
            name: create_app(app, self.settings, credentials=for_cell(self.credentials, name))
            for name, app in cells.apps.items()
        }
        for api in self.apps.values():
            api.state.cells = cells  # the catalogue lists every cell's tables (api.table_catalogue)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] not in ("http", "websocket"):
            return
        if scope["type"] == "websocket":  # the router's own refusals as the handshake's denial
            send = _socket_denial(scope, send)
        if self.cells is None:
            await _reply(send, 503, "starting", "the cells are not open yet")
            return
        await self._route(scope, receive, send)

    def start_tables(self, cells: Cells) -> None:
        """Run every cell's table runners (each cell's tables, on its own store), after
        creating the default table in its cell if that cell has no table yet."""
        home = cells.map.cell_for(DEFAULT_TABLE).name
        if ensure_default_table(cells.apps[home]) is not None:
            print(f"live table {DEFAULT_TABLE} created in cell {home} (Infinite Blackjack, EUR)")
        for name, app in cells.apps.items():
            runners = TableRunners(app)
            runners.start(name=f"croupier-tables-{name}")
            self.runners[name] = runners
            if name in self.apps:
                self.apps[name].state.table_runners = runners

    def stop_tables(self) -> None:
        """Stop every cell's runners (each after its current tick) and table streams."""
        for runners in self.runners.values():
            runners.stop()
        self.runners = {}
        for api in self.apps.values():
            streams = getattr(api.state, "table_streams", None)
            if streams is not None:
                streams.stop()
                api.state.table_streams = None

    def close_streams(self) -> None:
        """End every cell's open table streams and sockets now, each cleanly (shutdown:
        clients resume after their last event id); thread-safe."""
        for api in list(self.apps.values()):
            streams = getattr(api.state, "table_streams", None)
            if streams is not None:
                streams.close_streams()

    def _tables(self) -> list[str]:
        return [table for runners in self.runners.values() for table in list(runners.runners)]

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    if self._open is not None:
                        cells = await to_thread.run_sync(self._open)
                        cells.seal()
                        for name, app in cells.apps.items():
                            server_event(app, SignificantKind.SERVER_STARTED, name)
                        cells.start(self.settings.checkpoint_interval_seconds)
                        self._attach(cells)
                        await to_thread.run_sync(self.start_tables, cells)
                        # the cells' gauges and their tables' lag (api.metrics)
                        self.sampler = Sampler(cells.apps, self._tables)
                        self.sampler.start()
                        if self.settings.gc_tuned:  # a server's collector (ledger.gc_policy)
                            gc_policy.tune()
                except Exception as e:
                    await send({"type": "lifespan.startup.failed", "message": str(e)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.sampler is not None:
                    self.sampler.stop()
                if self._open is not None and self.cells is not None:
                    await to_thread.run_sync(self.stop_tables)
                    await to_thread.run_sync(self._stopped, self.cells)
                    await to_thread.run_sync(self.cells.close)
                    self.cells = None
                await send({"type": "lifespan.shutdown.complete"})
                return

    @staticmethod
    def _stopped(cells: Cells) -> None:
        for name, app in cells.apps.items():
            server_event(app, SignificantKind.SERVER_STOPPED, name)

    # -- routing ------------------------------------------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.cells is not None
        cellmap = self.cells.map
        path: str = scope["path"]
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        token = _bearer(headers.get(b"authorization"))
        if token is None and _QUERY_TOKEN.match(_PREFIX.sub(r"\2", path)):
            token = _query_token(scope.get("query_string", b""))
        named = token_cell(token) if token else None
        method = scope.get("method", "GET")  # a WebSocket's scope has none: its handshake

        chosen: str | None = None
        m = _PREFIX.match(path)
        if m:
            chosen = m.group(1)
            scope = dict(scope, path=m.group(2), raw_path=m.group(2).encode())
            path = m.group(2)
        elif CELL_HEADER in headers:
            chosen = headers[CELL_HEADER].decode("latin-1").strip()
        if chosen is not None:
            if chosen not in self.apps:
                await _reply(
                    send, 404, "cell-not-found", f"no cell {chosen!r}; cells: {cellmap.names}"
                )
                return
            if named is not None and named != chosen:
                await _reply(
                    send,
                    403,
                    "wrong-cell",
                    f"this session token belongs to cell {named!r}, not {chosen!r}: "
                    "send it without a cell prefix or header",
                    cell=named,
                )
                return
        if path in ("/health", "/v1/cells", "/v1/cells/index"):
            await self._spanning(path, token, send)
            return
        if chosen is None and named is not None and named in self.apps:
            chosen = named
        if chosen is None and (m := _ACCOUNT.match(path)):
            from urllib.parse import unquote

            chosen = cellmap.cell_for(unquote(m.group(1))).name
        table = _table_of(path)
        if table is not None:
            home = cellmap.cell_for(table).name
            if named is not None and named != home and self._session_of(named, token, path):
                await _reply(
                    send,
                    403,
                    "table-in-other-cell",
                    f"table {table!r} is in another cell ({home}) than this session "
                    f"({named}): a session plays only at the tables of its own cell",
                    table=table,
                    cell=home,
                    session_cell=named,
                )
                return
            if chosen is None:
                chosen = home
        if method == "POST" and path == "/v1/tables" and self._authenticated(token):
            body, receive = await _buffer(receive, self.settings.max_body_bytes)
            if body is None:
                await _reply(send, 413, "payload-too-large", "the request body is too large")
                return
            created = _field(body, "table")
            if created is not None:
                home = cellmap.cell_for(created).name
                if chosen is not None and chosen != home:
                    await _reply(
                        send,
                        403,
                        "table-in-other-cell",
                        f"table {created!r} is placed in cell {home!r}, not {chosen!r}: "
                        "create it without a cell prefix or header",
                        table=created,
                        cell=home,
                    )
                    return
                chosen = home
        if chosen is None and method == "POST" and path in _BY_PLAYER_BODY:
            body, receive = await _buffer(receive, self.settings.max_body_bytes)
            if body is None:
                await _reply(send, 413, "payload-too-large", "the request body is too large")
                return
            player = _field(body, "player_id")
            if player is not None and self._authenticated(token):
                chosen = cellmap.cell_for(player).name
        if chosen is None and path.startswith(_ASK_EACH) and scope["type"] == "http":
            await self._ask_each(scope, receive, send)
            return
        if chosen is None and path.startswith("/v1/audit/"):
            await _reply(
                send,
                400,
                "cell-required",
                f"an audit request concerns one cell's log: prefix the path with /cells/NAME "
                f"or send X-Croupier-Cell (cells: {', '.join(cellmap.names)})",
            )
            return
        await self._forward(chosen or cellmap.names[0], scope, receive, send)

    def _authenticated(self, token: str | None) -> bool:
        return token is not None and self.credentials.identify(token) is not None

    def _session_of(self, cell: str, token: str | None, path: str) -> bool:
        """True if ``token`` is a valid session token of ``cell`` and ``path`` acts or
        streams at a table (a table's catalogue row is anyone's to read: the cell answers
        it from the table's own cell). A token that does not verify goes on to its cell,
        which answers 401."""
        if token is None or cell not in self.apps:
            return False
        m = _TABLE.match(path)
        if m is not None and not m.group(2):
            return False  # GET /v1/tables/{table}: the catalogue
        caller = self.apps[cell].state.credentials.identify(token)
        return caller is not None and caller.role is Role.SESSION

    async def _forward(self, name: str, scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: Message) -> None:
            if message["type"] in _TAGGED:
                message = dict(message)
                message["headers"] = [*message.get("headers", []), (CELL_HEADER, name.encode())]
            await send(message)

        await self.apps[name](scope, receive, tagged)

    async def _ask_each(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, _ = await _buffer(receive, self.settings.max_body_bytes)
        if body is None:
            await _reply(send, 413, "payload-too-large", "the request body is too large")
            return
        names = list(self.apps)
        for i, name in enumerate(names):
            sent = await self._capture(name, scope, body)
            status = next((m["status"] for m in sent if m["type"] == "http.response.start"), 500)
            if status != 404 or i == len(names) - 1:
                for message in sent:
                    await send(message)
                return

    async def _capture(self, name: str, scope: Scope, body: bytes) -> list[Message]:
        """The cell's whole response to this request, kept (not yet sent)."""
        sent: list[Message] = []
        delivered = False

        async def again() -> Message:
            nonlocal delivered
            if delivered:
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def keep(message: Message) -> None:
            sent.append(message)

        await self._forward(name, scope, again, keep)
        return sent

    async def _spanning(self, path: str, token: str | None, send: Send) -> None:
        assert self.cells is not None
        cells = self.cells
        if path == "/health":
            sealers = {name: app.sealer for name, app in cells.apps.items()}
            doc = cells_health(sealers, cells.last_error).model_dump(exclude_none=True)
            await _json(send, 200, doc)
            return
        caller = self.credentials.identify(token) if token else None
        if caller is None:
            await _reply(send, 401, "unauthenticated", "a valid bearer token is required")
            return
        if path == "/v1/cells/index":
            if caller.role is not Role.AUDITOR:
                await _reply(send, 403, "forbidden", "the index is for auditors")
                return
            if cells.last_index is None:
                await _reply(send, 404, "index-not-found", "no index has been signed yet")
                return
            await _json(send, 200, cells.last_index)
            return
        if caller.role not in (Role.OPERATOR, Role.AUDITOR):
            await _reply(send, 403, "forbidden", "the cell map is for the operator and auditors")
            return
        heads = await to_thread.run_sync(cells.heads)
        await _json(send, 200, {"cells": heads})


_TAGGED = ("http.response.start", "websocket.accept", "websocket.http.response.start")
"""The messages that carry response headers: each gets ``X-Croupier-Cell``."""


def _table_of(path: str) -> str | None:
    """The table a path names (a seat's or a table's route), or None."""
    from urllib.parse import unquote

    m = _SEAT.match(path) or _TABLE.match(path)
    return unquote(m.group(1)) if m else None


def _query_token(query: bytes) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(query.decode("latin-1")).get("access_token")
    return values[0].strip() or None if values else None


def _socket_denial(scope: Scope, send: Send) -> Send:
    """``send`` for a WebSocket whose handshake the router refuses itself: its JSON answer
    goes out as the handshake's HTTP denial (the ASGI denial-response extension, as the
    table socket's own refusals), else the handshake is closed (1008, the code)."""
    denial = "websocket.http.response" in scope.get("extensions", {})

    async def deny(message: Message) -> None:
        kind = message["type"]
        if not kind.startswith("http.response."):
            await send(message)
        elif denial:
            await send({**message, "type": "websocket." + kind})
        elif kind == "http.response.body":
            code = json.loads(message.get("body") or b"{}").get("code", "refused")
            await send({"type": "websocket.close", "code": 1008, "reason": str(code)})

    return deny


def _bearer(header: bytes | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _field(body: bytes, name: str) -> str | None:
    """A string field of a JSON body (``player_id``, a new table's ``table``), or None."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    value = doc.get(name) if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


async def _buffer(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """Read the whole body (at most ``limit`` bytes, else None) and a ``receive`` that
    hands it to the cell's application again."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, receive
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    delivered = False

    async def again() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, again


async def _json(send: Send, status: int, doc: dict[str, Any]) -> None:
    body = json.dumps(doc).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _reply(send: Send, status: int, code: str, message: str, **ids: str) -> None:
    await _json(send, status, {"code": code, "message": message, **ids})
