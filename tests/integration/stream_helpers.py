"""Shared pieces of the live-stream tests: parsing Server-Sent Events, a table with a feed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from api.table_feed import Subscriber, TableFeed
from api.table_stream import TableStreams
from games.blackjack import Shoe
from tests.conftest import Store
from tests.integration.table_helpers import Live


@dataclass(frozen=True)
class Event:
    id: int | None
    type: str
    data: dict[str, Any]
    raw: str


def parse(stream: bytes) -> list[Event]:
    """Every event in a chunk of SSE text (comments and ``retry`` lines skipped)."""
    out = []
    for block in stream.decode().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, sep, value = line.partition(": ")
            if sep and name in ("id", "event", "data"):
                fields[name] = value
        if "event" in fields:
            data = json.loads(fields["data"])
            assert data["type"] == fields["event"]
            out.append(
                Event(int(fields["id"]) if "id" in fields else None, fields["event"], data, block)
            )
    return out


class Ticker:
    """A monotonic fake clock in seconds (the streams' heartbeats and grace)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Streamed(Live):
    """A live table (fake clock, runner) with its feed and the streams' machinery, all
    driven by hand: ``step()`` ticks the runner and then the feed, nothing runs alone."""

    def __init__(
        self,
        store: Store,
        config: dict[str, Any] | None = None,
        *shoes: Shoe,
        seeds: tuple[bytes, ...] = (),
        **streams: Any,
    ) -> None:
        super().__init__(store, *shoes, config=config, seeds=seeds)
        self.ticker = Ticker()
        settings = store.settings(**streams)
        self.streams = TableStreams(self.app, settings, clock=self.ticker, submit=lambda fn: fn())
        self.feed: TableFeed = self.streams.feed("T1")

    def step(self, ms: int = 0) -> list[str]:
        done = self.tick(ms)
        self.streams.tick()
        return done

    def subscribe(self, session: str, after: int | None = None, limit: int = 10_000) -> Subscriber:
        sub = Subscriber("T1", session, limit, self.ticker())
        start = self.feed.round_start if after is None else after
        assert self.feed.subscribe(sub, start), "within the feed's buffer"
        self.streams.connections.opened(session, "T1")
        return sub

    def drop(self, sub: Subscriber) -> None:
        self.feed.unsubscribe(sub)
        self.streams.connections.closed(session=sub.session, table="T1")


def read(sub: Subscriber) -> list[Event]:
    return parse(sub.drain())


def ids(events: list[Event]) -> list[int]:
    return [e.id for e in events if e.id is not None]
