"""A connection upgraded to a WebSocket leaves nothing for the cyclic garbage collector
(api/connection_guard.py): uvicorn's HTTP protocol object and its parser hold each other,
and a connection that is upgraded never hears ``connection_lost`` on that protocol, which
is where uvicorn breaks the pair. At 10,000 table players those pairs were the largest
part of the collector's garbage (docs/performance/table-command-budget.md, "The collector
at 10,000 seats")."""

from __future__ import annotations

import asyncio
import threading
import time

import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from api.connection_guard import PROTOCOL, WS_PROTOCOL, GuardedProtocol
from tests.helpers import cyclic_garbage


async def hello(ws: WebSocket) -> None:
    await ws.accept()
    await ws.send_text("hello")
    await ws.close()


def test_an_upgraded_connection_leaves_its_http_protocol_to_reference_counting() -> None:
    from websockets.asyncio.client import connect

    app = Starlette(routes=[WebSocketRoute("/ws", hello)])
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        http=PROTOCOL,
        ws=WS_PROTOCOL,
        lifespan="off",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]

        async def talk() -> list[str]:
            said = []
            for _ in range(5):
                async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
                    said.append(str(await ws.recv()))
            return said

        with cyclic_garbage() as garbage:
            assert asyncio.run(talk()) == ["hello"] * 5
            time.sleep(0.5)  # the server hears of the last close
        count = sum(isinstance(o, GuardedProtocol) for o in garbage)
        del garbage
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert count == 0
