"""The live stream over real HTTP (uvicorn in a thread, on the runner's fake clock): who
may stream, what each session sees, and ``Last-Event-ID`` across a reconnect.

The ledger's clock is fake (the runner is ticked by hand); messages arrive because the
test's own commands commit, so every wait is for a message, with httpx's read timeout
as the failure (no sleeps)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from api.app import create_app
from api.auth import Credentials
from tests.conftest import Store
from tests.integration.stream_helpers import Event, parse
from tests.integration.table_helpers import CONFIG, Live

OPERATOR, AUDITOR = "op-token-" + "x" * 20, "aud-token-" + "y" * 20


class Served:
    def __init__(self, store: Store) -> None:
        self.live = Live(store, config=dict(CONFIG))
        self.creds = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
        self.api = create_app(self.live.app, credentials=self.creds)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self.api, log_level="warning", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]})
        self.thread.start()
        self.client = httpx.Client(base_url=self.base, timeout=20)

    def token(self, session: str) -> str:
        return self.creds.session_token(session)

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture
def served(store: Store) -> Iterator[Served]:
    s = Served(store)
    try:
        yield s
    finally:
        s.stop()


class Stream:
    """One open SSE response, read event by event."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.iter_lines()
        self.events: list[Event] = []

    def until(self, wanted: Any) -> Event:
        block: list[str] = []
        for line in self.lines:
            if line:
                block.append(line)
                continue
            found = parse(("\n".join(block) + "\n\n").encode())
            block = []
            for e in found:
                self.events.append(e)
                if wanted(e):
                    return e
        raise AssertionError("the stream ended")


@contextmanager
def stream(s: Served, session: str, **headers: str) -> Iterator[Stream]:
    h = {"Authorization": f"Bearer {s.token(session)}", **headers}
    with s.client.stream("GET", "/v1/tables/T1/stream", headers=h) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        yield Stream(r)


def test_only_a_session_token_opens_a_stream(served: Served) -> None:
    s = served
    ann = s.live.player("ann")
    s.live.tick()
    url = "/v1/tables/T1/stream"
    assert "/v1/tables/{table}/stream" in s.client.get("/openapi.json").json()["paths"]
    assert s.client.get(url).status_code == 401
    for token in (OPERATOR, AUDITOR):
        r = s.client.get(url, headers={"Authorization": f"Bearer {token}"})
        assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    own = {"Authorization": f"Bearer {s.token(ann)}"}
    r = s.client.get("/v1/tables/nope/stream", headers=own)
    assert (r.status_code, r.json()["code"]) == (404, "table-not-found")
    r = s.client.get(url, headers={**own, "Last-Event-ID": "abc"})
    assert (r.status_code, r.json()["code"]) == (422, "invalid-request")
    r = s.client.get(url, headers={**own, "Last-Event-ID": "999999999"})
    assert (r.status_code, r.json()["code"]) == (422, "invalid-request")
    # two streams per session (the default), the third is refused
    with stream(s, ann), stream(s, ann):
        r = s.client.get(url, headers=own)
        assert (r.status_code, r.json()["code"]) == (429, "too-many-streams")


def test_an_event_source_authenticates_with_access_token(served: Served) -> None:
    s = served
    ann = s.live.player("ann")
    s.live.tick()
    url = f"/v1/tables/T1/stream?access_token={s.token(ann)}"
    with s.client.stream("GET", url) as r:
        assert r.status_code == 200
        first = Stream(r).until(lambda e: True)
        assert first.type in ("shoe-shuffled", "round-opened")
    bad = s.client.get("/v1/tables/T1/stream?access_token=" + s.token(ann)[:-2] + "xx")
    assert bad.status_code == 401


def test_each_session_sees_its_own_seat_and_resumes_after_its_last_id(served: Served) -> None:
    s = served
    ann, bob = s.live.player("ann"), s.live.player("bob")
    s.live.tick()
    with stream(s, ann) as steady, stream(s, bob) as other:
        with stream(s, ann) as flaky:
            s.live.bet(ann, "main", 1_000)
            got = flaky.until(lambda e: e.type == "bet-accepted")
            assert got.data["amount"] == 1_000
            last = got.id
        assert last is not None
        s.live.bet(bob, "main", 500)
        s.live.bet(ann, "hot-3", 100)
        s.live.tick(10_000)  # deal
        steady.until(lambda e: e.type == "bets-closed")
        bob_bet = other.until(lambda e: e.type == "bet-accepted")
        assert bob_bet.data["amount"] == 500
        with stream(s, ann, **{"Last-Event-ID": str(last)}) as back:
            back.until(lambda e: e.type == "bets-closed")
        other.until(lambda e: e.type == "bets-closed")
    whole = [e for e in steady.events if e.id is not None]
    resumed = [e for e in back.events if e.id is not None]
    assert [e.raw for e in resumed] == [e.raw for e in whole if e.id > last][: len(resumed)]
    assert [e.data["amount"] for e in resumed if e.type == "bet-accepted"] == [100]
    for e in steady.events + back.events:
        assert bob not in e.raw
        assert e.type != "bet-accepted" or e.data["amount"] != 500
    for e in other.events:
        assert ann not in e.raw
        assert e.type != "bet-accepted" or e.data["amount"] == 500
