"""``X-Log-Position`` on every answer to a POST: the newest log position this worker has
written when it answers, so at or after the command's own events. Pass it as
``at_least`` to a read (``GET /v1/accounts/{player}/statement?at_least=…``) to read your
own writes from the views (:mod:`ledger.readside`).

A retried request answered from the record another worker wrote may carry an older
position than that record's: read with no ``at_least`` (the log's head) after a retry."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = b"x-log-position"


class Position:
    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            casino = getattr(self.state, "casino", None)
            if message["type"] == "http.response.start" and casino is not None:
                position = str(getattr(casino, "position", 0)).encode()
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (HEADER, position)]
            await send(message)

        await self.app(scope, receive, sending)
