"""A table message framed once, written to each of its sockets without a task per socket.

A table's shared message goes to every player at the table: thousands of sockets. Sent
the ordinary way (``WebSocket.send_text`` from each socket's writer task), each socket
costs a task wake-up, the ASGI send chain and the protocol library serializing the same
bytes again: about 100 µs of Python a socket, which at 10,000 players is a second per
message (docs/performance/table-command-budget.md). A server-to-client frame is not
masked (RFC 6455 §5.1), so the frame of one message is the same bytes on every socket:

- :func:`text_frame` has the ``websockets`` library (the protocol library uvicorn's
  ``websockets-sansio`` implementation runs on) serialize a text frame once; nothing
  here frames by hand;
- :class:`FrameWriter` is how an application reaches its connection's transport: the
  server's WebSocket protocol (``api.connection_guard.GuardedWebSocket``) puts one in the
  ASGI scope's ``extensions`` under :data:`EXTENSION`. ``write`` hands the bytes to the
  transport (uvloop's, in C) only while the connection is open and its buffer below the
  high-water mark; otherwise the caller sends the usual way, whose ``send`` waits for the
  buffer to drain (the slow-client policy stays the queue's: api/table_feed.py).

Frames written here and frames the protocol writes (answers, pings, the close) are whole
frames written on the event loop's thread one after another, never interleaved.
"""

from __future__ import annotations

from typing import Any

from websockets.frames import Frame, Opcode
from websockets.protocol import State

EXTENSION = "croupier.frames"
"""The ASGI scope extension holding a socket's :class:`FrameWriter`."""


def text_frame(text: str) -> bytes:
    """``text`` as one unmasked, uncompressed text frame, as the server sends it."""
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=False, extensions=[])


class FrameWriter:
    """Writes frames straight to one WebSocket connection (uvicorn's
    ``WebSocketsSansIOProtocol``), on the event loop's thread."""

    __slots__ = ("protocol",)

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol

    def ready(self) -> bool:
        """Open, the handshake done, no close sent or received, the transport's buffer
        below its high-water mark (uvicorn's ``writable``)."""
        p = self.protocol
        return bool(
            p.handshake_complete
            and not p.close_sent
            and not p.disconnected
            and p.initial_response is None
            and p.writable.is_set()
            and p.conn.state is State.OPEN
            and not p.transport.is_closing()
        )

    def write(self, frames: bytes) -> bool:
        """Write whole frames if :meth:`ready`; False (nothing written) otherwise."""
        if not self.ready():
            return False
        self.protocol.transport.write(frames)
        return True


def frame_writer(scope: Any) -> FrameWriter | None:
    """The connection's :class:`FrameWriter`, if its server offers one (``croupier
    serve`` does; a test client or another server may not)."""
    writer = scope.get("extensions", {}).get(EXTENSION)
    return writer if isinstance(writer, FrameWriter) else None
