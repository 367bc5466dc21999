"""One feed per live table: reads the log once and fans its messages out to every stream.

The feed keeps a :class:`~api.table_messages.TableFold` at the log's newest position and
the encoded messages of the current and the previous round (the buffer). A stream
subscribes with the position it has seen: under the feed's lock it gets the buffered
messages after that position (its own and the table's), then every new one as the feed
reads it, so nothing is lost or repeated between the two. A stream further behind than
the buffer replays the log first (:func:`replay`), then subscribes.

Fan-out (issue 28): a message is encoded once, when the feed reads it
(:class:`Encoded`: its JSON, as a Server-Sent Event and as a WebSocket line), and that
one object is queued to every client it is for; a seat's own messages go only to that
seat's session. Nothing is encoded per client.

Each subscriber has a bounded queue: a client that does not read fast enough has its
queue overflow, is dropped (its stream ends) and reconnects with ``Last-Event-ID``; the
server never holds more than ``queue_limit`` messages for it. Heartbeats carry the
feed's position as their id, so an idle client's ``Last-Event-ID`` stays recent.
"""

from __future__ import annotations

import bisect
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from api.socket_frames import text_frame
from api.table_messages import (
    CHAT_TYPES,
    PLAYER_SETTINGS,
    WINDOWS,
    Message,
    TableFold,
    options_message,
)
from ledger.casino import Casino
from ledger.tables.aggregates import Table, TableRound, seat_id_for, table_id_for


@dataclass(frozen=True, slots=True)
class Encoded:
    """One message, encoded once for every client: ``sse`` (an event of
    ``text/event-stream``) and ``line`` (the WebSocket form: one JSON object, with the
    position as ``id``; docs/guides/table-websocket.md)."""

    position: int
    sse: bytes
    line: str
    chat: bool
    _frame: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def frame(self) -> bytes:
        """``line`` as a WebSocket text frame, serialized once (on first use: an SSE-only
        table never frames) for every socket it is written to (api/socket_frames.py)."""
        if self._frame is None:
            object.__setattr__(self, "_frame", text_frame(self.line))
        assert self._frame is not None
        return self._frame


def encode(m: Message) -> Encoded:
    """``m`` encoded once: one ``json.dumps`` of its body (which never holds a raw
    newline), framed as a Server-Sent Event (``id``: the log position, none for derived
    state; ``event``: the type; one ``data`` line) and as a WebSocket JSON line (the same
    object with ``id`` first, ``null`` for derived state)."""
    body = json.dumps({"type": m.type, **m.data}, separators=(",", ":"))
    head = f"id: {m.position}\n" if m.position else ""
    sse = f"{head}event: {m.type}\ndata: {body}\n\n".encode()
    line = f'{{"id":{m.position or "null"},{body[1:]}'
    return Encoded(m.position, sse, line, m.type in CHAT_TYPES.values())


class Subscriber:
    """One stream's queue. ``push`` is called under the feed's lock; the stream drains it
    (``deque`` appends and pops are thread-safe)."""

    def __init__(
        self,
        table: str,
        session: str,
        limit: int,
        now: float,
        chat: bool = True,
        settings_id: str | None = None,
    ) -> None:
        self.table = table
        self.session = session
        self.chat = chat
        """Whether this client gets the table chat (the player's ``show_chat``)."""
        self.settings_id = settings_id
        """The player's settings aggregate: its changes set ``chat`` while streaming."""
        self.limit = limit
        self.queue: deque[Encoded] = deque()
        self.dropped = False
        self.closed = False
        self.last_push = now
        self.wake: Callable[[], None] = lambda: None
        """Set by the stream: called (from the feed's thread) when there is news."""

    def push(self, chunk: Encoded, now: float) -> bool:
        if len(self.queue) >= self.limit:
            self.dropped = True
            self.queue.clear()
            return False
        self.queue.append(chunk)
        self.last_push = now
        return True

    def take(self) -> list[Encoded]:
        """Every queued message, in order (the queue is left empty)."""
        out = []
        while self.queue:
            out.append(self.queue.popleft())
        return out

    def drain(self) -> bytes:
        """Every queued message as Server-Sent Events."""
        return b"".join(e.sse for e in self.take())


class TableFeed:
    def __init__(
        self,
        app: Casino,
        table: str,
        clock: Callable[[], float],
        heartbeat_seconds: float = 15.0,
    ) -> None:
        self.app = app
        self.table = table
        self.clock = clock
        self.heartbeat_seconds = heartbeat_seconds
        self.lock = threading.Lock()
        self._beat_due = math.inf
        """No stream can need a heartbeat before this (see :meth:`_heartbeats`)."""
        self.fold = TableFold(app, table)
        self.subscribers: dict[str, set[Subscriber]] = {}
        self.table_items: list[Encoded] = []
        self.session_items: dict[str, list[Encoded]] = {}
        start = self._current_round_start()
        self.position = start
        self.buffer_start = start
        """Streams after this position are served from the buffer; before it, replayed."""
        self.round_start = start
        """Where a stream without ``Last-Event-ID`` starts: just before its round opened."""
        self._previous_start = start
        self._shoe_shuffled_at = 0
        self.poll()

    def _current_round_start(self) -> int:
        """The log position just before the current round opened (its seats open after
        it), so the feed's buffer starts with the whole current round."""
        table = self.app.peek(Table, table_id_for(self.table))
        if table is None or table.round_id is None:
            return int(self.app.recorder.max_notification_id() or 0)
        from uuid import UUID

        rnd = self.app.peek(TableRound, UUID(table.round_id))
        assert rnd is not None
        return int(rnd.seats_from)

    # -- reading the log ------------------------------------------------------------------

    def poll(self, wake: Callable[[list[Subscriber]], None] | None = None) -> list[Subscriber]:
        """Read the log up to its newest position; push every message to its streams and
        heartbeats to idle ones; return the subscribers that got something (to wake).

        ``wake`` (the streams' waker, which hands the subscribers to the event loop and
        returns) is called early with those reached so far when a window closes, before
        every seat's options are built: at 10,000 seats that takes the feed's thread
        0.4 to 1.3 s, and the close is what every player waits for first."""
        woken: set[Subscriber] = set()
        top = int(self.app.recorder.max_notification_id() or 0)
        with self.lock:
            while self.position < top:
                messages, reached = self.fold.read(self.position, top)
                for m in messages:
                    self._publish(m, woken, wake)
                self.position = reached
            self._heartbeats(woken)
        return list(woken)

    def _publish(
        self,
        m: Message,
        woken: set[Subscriber],
        wake: Callable[[list[Subscriber]], None] | None = None,
    ) -> None:
        now = self.clock()
        if m.type == PLAYER_SETTINGS:
            for subs in self.subscribers.values():
                for sub in subs:
                    if sub.settings_id == m.data["settings_id"]:
                        sub.chat = bool(m.data["show_chat"])
            return
        chunk = encode(m)
        chat = chunk.chat
        if m.type == "shoe-shuffled":
            self._shoe_shuffled_at = m.position
        if m.type == "round-opened":
            self._new_round(m)
        if m.session is None:
            self.table_items.append(chunk)
            for subs in self.subscribers.values():
                self._push_all([s for s in subs if s.chat] if chat else subs, chunk, now, woken)
        else:
            self.session_items.setdefault(m.session, []).append(chunk)
            self._push_all(self.subscribers.get(m.session, ()), chunk, now, woken)
        if m.session is None and m.type in WINDOWS:
            if wake is not None and woken:
                wake(list(woken))  # the close now; each seat's options follow
                woken.clear()
            for o in self.fold.options_for(self.subscribers):
                self._push_all(self.subscribers.get(o.session or "", ()), encode(o), now, woken)

    def _push_all(
        self, subs: Iterable[Subscriber], chunk: Encoded, now: float, woken: set[Subscriber]
    ) -> None:
        for sub in list(subs):
            if not sub.push(chunk, now):
                self._remove(sub)
            woken.add(sub)

    def _new_round(self, m: Message) -> None:
        """Keep the buffer to this round and the one before."""
        start = m.position - 1
        if m.data.get("shoe_position") == 0 and self._shoe_shuffled_at:
            start = min(start, self._shoe_shuffled_at - 1)
        self.buffer_start, self._previous_start = self._previous_start, start
        self.round_start = start
        cut = bisect.bisect_right(self.table_items, self.buffer_start, key=_position)
        del self.table_items[:cut]
        for session in list(self.session_items):
            items = self.session_items[session]
            cut = bisect.bisect_right(items, self.buffer_start, key=_position)
            del items[:cut]
            if not items:
                del self.session_items[session]

    def _heartbeats(self, woken: set[Subscriber]) -> None:
        """A heartbeat to each stream idle for ``heartbeat_seconds``. Called at every poll
        (many a second), it looks at the streams only once the first of them can be due
        (``_beat_due``: a push only makes a stream's next beat later), not at every
        stream every time: 10,000 streams checked at each poll were a tenth of the
        server's CPU at a 10,000-player table."""
        now = self.clock()
        if now < self._beat_due:
            return
        beat = encode(Message(self.position, "heartbeat", {"position": self.position}))
        due = math.inf
        for subs in list(self.subscribers.values()):
            for sub in list(subs):
                if now - sub.last_push >= self.heartbeat_seconds:
                    woken.add(sub)
                    if not sub.push(beat, now):
                        self._remove(sub)
                        continue
                due = min(due, sub.last_push + self.heartbeat_seconds)
        # at most one look a second: streams pushed at scattered times would otherwise
        # bring the next look near at every poll (a beat is then up to a second late)
        self._beat_due = max(due, now + min(1.0, self.heartbeat_seconds / 15))

    # -- streams --------------------------------------------------------------------------

    def subscribe(self, sub: Subscriber, after: int) -> bool:
        """Register ``sub`` to get everything after ``after``: the buffered messages now,
        the rest as they come. False if ``after`` is older than the buffer (replay the
        log up to ``buffer_start`` first, then subscribe again)."""
        with self.lock:
            if after < self.buffer_start:
                return False
            now = self.clock()
            table = self.table_items[bisect.bisect_right(self.table_items, after, key=_position) :]
            own = self.session_items.get(sub.session, [])
            own = own[bisect.bisect_right(own, after, key=_position) :]
            for chunk in sorted([*table, *own], key=_position):
                if sub.chat or not chunk.chat:
                    sub.queue.append(chunk)
            sub.last_push = now
            self._beat_due = min(self._beat_due, now + self.heartbeat_seconds)
            current = self._options_now(sub.session)
            if current is not None:
                sub.queue.append(encode(current))
            self.subscribers.setdefault(sub.session, set()).add(sub)
            return True

    def _options_now(self, session: str) -> Message | None:
        rnd = self.fold.current
        if rnd is None or rnd.up is None or rnd.closed:
            return None
        seat = self.fold.seats.get(seat_id_for(rnd.id, session))
        return None if seat is None else options_message(rnd, seat, self.fold.states_of(rnd))

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            self._remove(sub)

    def _remove(self, sub: Subscriber) -> None:
        subs = self.subscribers.get(sub.session)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self.subscribers[sub.session]

    def count(self) -> int:
        with self.lock:
            return sum(len(s) for s in self.subscribers.values())


def replay_pages(
    app: Casino, table: str, session: str, after: int, upto: int, chat: bool = True
) -> Iterator[list[Encoded]]:
    """The stream of one session from the log (a reconnect older than the feed's
    buffer), page by page, up to ``upto``; the chat's messages only if ``chat``."""
    fold = TableFold(app, table, only_session=session)
    position = after
    while position < upto:
        messages, position = fold.read(position, upto)
        yield [encode(m) for m in messages if chat or m.type not in CHAT_TYPES.values()]


def replay(
    app: Casino, table: str, session: str, after: int, upto: int, chat: bool = True
) -> Iterator[bytes]:
    """:func:`replay_pages` as Server-Sent Events."""
    for page in replay_pages(app, table, session, after, upto, chat):
        yield b"".join(e.sse for e in page)


def _position(e: Encoded) -> int:
    return e.position


def describe(m: Message) -> dict[str, Any]:
    return {"id": m.position, "type": m.type, **m.data}
