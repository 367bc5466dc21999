"""A table message framed once and written straight to its sockets (api/socket_frames.py,
``Player._wake`` in api/table_socket.py): the frame is byte for byte what the protocol
library sends, it is written only while the connection can take it, and a socket's news
goes to its writer task whenever anything else is in flight on it."""

from __future__ import annotations

import asyncio
from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.frames import Frame
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from api.socket_frames import EXTENSION, FrameWriter, frame_writer, text_frame
from api.table_feed import Encoded, Subscriber, encode
from api.table_messages import Message
from api.table_socket import Player


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65_535, 65_536, 200_000])
def test_a_frame_is_what_the_protocol_library_sends_for_the_same_text(size: int) -> None:
    text = "é" * (size // 2) + "x" * (size % 2)
    conn = ServerProtocol()
    conn.state = State.OPEN
    conn.send_text(text.encode())
    assert text_frame(text) == b"".join(conn.data_to_send())
    # and a client reads it back as the text
    reader = StreamReader()
    reader.feed_data(text_frame(text))
    parser = Frame.parse(reader.read_exact, mask=False)
    try:
        next(parser)
    except StopIteration as done:
        assert done.value.data.decode() == text
    else:  # the whole frame was fed: the parser needs nothing more
        raise AssertionError("the frame was not complete")


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return self.closing


def protocol(**changes: Any) -> SimpleNamespace:
    writable = asyncio.Event()
    writable.set()
    p = SimpleNamespace(
        handshake_complete=True,
        close_sent=False,
        disconnected=False,
        initial_response=None,
        writable=writable,
        conn=SimpleNamespace(state=State.OPEN),
        transport=Transport(),
    )
    for name, value in changes.items():
        setattr(p, name, value)
    return p


def not_writable() -> asyncio.Event:
    return asyncio.Event()


@pytest.mark.parametrize(
    "change",
    [
        {"handshake_complete": False},
        {"close_sent": True},
        {"disconnected": True},
        {"initial_response": (403, [], b"")},
        {"conn": SimpleNamespace(state=State.CLOSING)},
        {"writable": "paused"},
        {"closing": True},
    ],
    ids=lambda c: next(iter(c)),
)
def test_the_writer_writes_only_to_an_open_connection_that_can_take_it(
    change: dict[str, Any],
) -> None:
    open_ = protocol()
    assert FrameWriter(open_).write(b"frame") is True
    assert open_.transport.written == [b"frame"]

    if change == {"writable": "paused"}:
        p = protocol(writable=not_writable())
    elif change == {"closing": True}:
        p = protocol()
        p.transport.closing = True
    else:
        p = protocol(**change)
    writer = FrameWriter(p)
    assert writer.ready() is False
    assert writer.write(b"frame") is False
    assert p.transport.written == []


def test_a_connection_offers_its_writer_in_the_scope_only_when_the_server_does() -> None:
    writer = FrameWriter(protocol())
    assert frame_writer({"extensions": {EXTENSION: writer}}) is writer
    assert frame_writer({"extensions": {"websocket.http.response": {}}}) is None
    assert frame_writer({}) is None


def message(position: int, kind: str = "card-dealt") -> Encoded:
    return encode(Message(position, kind, {"n": position}))


def player(writer: FrameWriter | None) -> Player:
    """A socket's player as its handshake leaves it, without a socket: only what ``_wake``
    reads."""
    p = Player.__new__(Player)
    p.frames = writer
    p.busy = False
    p.answers = deque()
    p.sub = Subscriber("t1", "s1", limit=10, now=0.0)
    p.streams = SimpleNamespace(closing=False)  # type: ignore[assignment]
    p.news = asyncio.Event()
    return p


def test_news_is_written_at_once_as_each_messages_one_frame() -> None:
    proto = protocol()
    p = player(FrameWriter(proto))
    first, second = message(7), message(8)
    p.sub.push(first, 1.0)
    p.sub.push(second, 1.0)
    p._wake()
    assert proto.transport.written == [text_frame(first.line) + text_frame(second.line)]
    assert first.frame is first.frame  # serialized once, then the same bytes to every socket
    assert not p.sub.queue
    assert not p.news.is_set()


@pytest.mark.parametrize("why", ["busy", "answer", "dropped", "closing", "paused", "no-writer"])
def test_news_goes_to_the_writer_task_when_anything_else_is_in_flight(why: str) -> None:
    proto = protocol(writable=not_writable()) if why == "paused" else protocol()
    p = player(None if why == "no-writer" else FrameWriter(proto))
    if why == "busy":
        p.busy = True
    elif why == "answer":
        p.answers.append('{"type":"answer"}')
    elif why == "dropped":
        p.sub.dropped = True
    elif why == "closing":
        p.streams.closing = True
    queued = message(9)
    p.sub.push(queued, 1.0)
    p._wake()
    assert proto.transport.written == []
    assert list(p.sub.queue) == [queued]  # left, in order, for the writer task
    assert p.news.is_set()
