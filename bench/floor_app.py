"""The least an HTTP answer can cost in Python: a bare ASGI application for ``bench_floor.py``.

It reads the request's body and answers every request with the same JSON bytes, about
the size of a Red Dog answer; no routing, no framework, no middleware, no validation.
``bench/bench_floor.py`` serves it with uvicorn as ``croupier serve`` runs (httptools,
uvloop, access log off) and measures the server's CPU a request: what any Python server
on this machine spends before an application does anything.
"""

from __future__ import annotations

from typing import Any

ANSWER = (
    b'{"game_code":"RD-0000-0000-0000","status":"settled","round_id":'
    b'"00000000-0000-0000-0000-000000000000","bet":1000,"raise":0,"spread":3,'
    b'"cards":["7H","QS","KD"],"payout":0,"balance":99000,"events":8,'
    b'"view":{"first":"7H","second":"QS","third":"KD","multiplier":0,"result":"lose"}}'
) * 3
HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(ANSWER)).encode()),
]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})
