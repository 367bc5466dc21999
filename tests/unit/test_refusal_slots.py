"""The refusal slots of the connection guard (api/connection_guard.py): when every slot
is taken, the connection that makes way is one that has begun a request, else the
oldest that is not a health probe whose request arrived after its accept (in a burst of
accepts its bytes are not read yet), so a probe from an address over its cap is answered,
not dropped."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from api.connection_guard import HEALTH_PROBE, REFUSAL_SLOTS, Admission


class Transport:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None


class Conn:
    """What ``Admission.hold`` reads of a connection, over a real socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.transport = Transport(sock)
        self.begun = False
        self.dropped = False

    def drop(self) -> None:
        self.dropped = True


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for a, b in made:
        a.close()
        b.close()


def connection(pairs: list[tuple[socket.socket, socket.socket]], sent: bytes = b"") -> Conn:
    server, client = socket.socketpair()
    pairs.append((server, client))
    if sent:
        client.sendall(sent)
    return Conn(server)


def test_a_probe_that_arrived_after_its_accept_is_not_the_one_dropped(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    probe = connection(pairs)
    admission.hold(probe)  # the oldest, nothing sent yet when it was accepted
    pairs[0][1].sendall(HEALTH_PROBE + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # its request comes
    others = [connection(pairs) for _ in range(REFUSAL_SLOTS - 1)]
    for c in others:
        admission.hold(c)
    newcomer = connection(pairs)
    admission.hold(newcomer)  # every slot taken: one makes way
    assert not probe.dropped
    assert others[0].dropped  # the oldest that is not a probe
    assert sum(c.dropped for c in others) == 1


def test_one_that_has_begun_a_request_makes_way_first(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    waiting = [connection(pairs) for _ in range(REFUSAL_SLOTS)]
    for c in waiting:
        admission.hold(c)
    waiting[5].begun = True  # a byte a second: slow on purpose
    admission.hold(connection(pairs))
    assert [i for i, c in enumerate(waiting) if c.dropped] == [5]


def test_in_a_burst_of_accepts_a_probe_has_until_the_burst_is_seen_to_show_its_request(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    """An attacker's reconnections arrive hundreds at once and are all accepted before any
    is read; a probe accepted among them whose request reached the socket only after its
    accept is not dropped, because the slots are trimmed once the whole burst has been
    seen (with the slots trimmed at each accept it was: the oldest silent one)."""
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    settled = [connection(pairs) for _ in range(REFUSAL_SLOTS)]
    for c in settled:
        c.begun = True  # held before the burst, a byte sent since: slow on purpose

    async def burst() -> tuple[Conn, list[Conn]]:
        for c in settled:
            admission.hold(c)
        probe = connection(pairs)
        admission.hold(probe)  # accepted with nothing in yet
        probe_client = pairs[-1][1]
        newcomers = [connection(pairs) for _ in range(3 * REFUSAL_SLOTS)]
        for c in newcomers:
            admission.hold(c)
        assert not probe.dropped and len(admission.waiting) > REFUSAL_SLOTS  # not yet
        probe_client.sendall(HEALTH_PROBE + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # it comes
        await asyncio.sleep(0)  # the loop's next pass: the trim
        return probe, newcomers

    probe, newcomers = asyncio.run(burst())
    assert not probe.dropped
    assert len(admission.waiting) == REFUSAL_SLOTS
    assert all(c.dropped for c in settled)  # the slow ones made way first
    dropped = [c.dropped for c in newcomers]
    # then the oldest silent ones: the newest stay
    assert dropped == [True] * (2 * REFUSAL_SLOTS + 1) + [False] * (REFUSAL_SLOTS - 1)
