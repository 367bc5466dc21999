"""``croupier serve``'s shutdown: open table streams end first, cleanly."""

from __future__ import annotations

from types import FrameType

import uvicorn
from fastapi import FastAPI


class ClosingServer(uvicorn.Server):
    """uvicorn's server, which on Ctrl-C or SIGTERM first ends every open table stream with
    a complete response: without it the graceful shutdown waits for the streams (they never
    end by themselves), cancels them after its timeout (a CancelledError traceback; the
    client sees a broken transfer) and only then writes the last checkpoint."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.api = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        streams = getattr(self.api.state, "table_streams", None)
        if streams is not None:
            streams.close_streams()
        super().handle_exit(sig, frame)
