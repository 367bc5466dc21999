"""The refusal slots of the connection guard (api/connection_guard.py): when every slot
is taken, the connection that makes way is one that has begun a request (read, or bytes
waiting in its socket that are not a health probe's), else the oldest that has been
silent for the quiet grace; one silent for less waits that moment more (a probe's request
can be a moment behind its connection), so a probe from an address over its cap is
answered, not dropped."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.connection_guard import (
    HEALTH_PROBE,
    QUIET_GRACE_SECONDS,
    QUIET_SLOTS,
    REFUSAL_SLOTS,
    Admission,
)

LATER = QUIET_GRACE_SECONDS + 0.01  # every connection made now is past its quiet grace


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
        self.accepted = time.monotonic()
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


def aged(conn: Conn) -> Conn:
    """``conn`` as if accepted a quiet grace ago."""
    conn.accepted -= LATER
    return conn


def test_a_probe_that_arrived_after_its_accept_is_not_the_one_dropped(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    probe = aged(connection(pairs))
    admission.hold(probe)  # the oldest, nothing sent yet when it was accepted
    pairs[0][1].sendall(HEALTH_PROBE + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # its request comes
    others = [aged(connection(pairs)) for _ in range(REFUSAL_SLOTS - 1)]
    for c in others:
        admission.hold(c)
    newcomer = connection(pairs)
    admission.hold(newcomer)  # every slot taken: one makes way
    assert not probe.dropped
    assert others[0].dropped  # the oldest silent one that is not a probe
    assert sum(c.dropped for c in others) == 1 and not newcomer.dropped


def test_one_that_has_begun_a_request_makes_way_first(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    waiting = [aged(connection(pairs)) for _ in range(REFUSAL_SLOTS)]
    for c in waiting:
        admission.hold(c)
    waiting[5].begun = True  # a byte a second: slow on purpose
    admission.hold(connection(pairs))
    assert [i for i, c in enumerate(waiting) if c.dropped] == [5]


def test_bytes_waiting_that_are_not_a_probe_make_way_before_a_silent_connection(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    """An attacker's reconnection sends its first byte at once; a probe's request can be
    a moment behind its connection: the one with a byte in makes way, not the silent
    one, though it is older."""
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    silent = aged(connection(pairs))
    admission.hold(silent)
    slow = [connection(pairs, sent=b"G") for _ in range(REFUSAL_SLOTS)]
    for c in slow:
        admission.hold(c)
    assert not silent.dropped
    assert [c.dropped for c in slow] == [True] + [False] * (REFUSAL_SLOTS - 1)


def test_in_a_burst_of_accepts_a_probe_a_moment_behind_its_connection_is_answered(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    """An attacker's reconnections arrive hundreds at once and are all accepted before any
    is read. A probe accepted among them whose request reaches the socket a moment after
    its accept (after the burst has been seen) is not dropped: the slow ones make way,
    then silent ones beyond the spare slots; the young silent ones within them are looked
    at again once their grace is over, and the oldest of those that are still silent make
    way then (with the slots trimmed at each accept, the probe was the oldest silent one)."""
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    settled = [aged(connection(pairs)) for _ in range(REFUSAL_SLOTS)]
    for c in settled:
        c.begun = True  # held before the burst, a byte sent since: slow on purpose

    async def burst() -> tuple[Conn, list[Conn], list[Conn], int]:
        for c in settled:
            admission.hold(c)
        probe = connection(pairs)
        admission.hold(probe)  # accepted with nothing in yet
        probe_client = pairs[-1][1]
        attack = [connection(pairs, sent=b"G") for _ in range(3 * REFUSAL_SLOTS)]
        quiet = [connection(pairs) for _ in range(QUIET_SLOTS)]
        for c in attack + quiet:
            admission.hold(c)
        assert not probe.dropped and len(admission.waiting) > REFUSAL_SLOTS  # not yet
        await asyncio.sleep(0)  # the loop's next pass: the trim
        after_burst = len(admission.waiting)
        assert not probe.dropped  # nothing in yet, but young
        probe_client.sendall(HEALTH_PROBE + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # it comes
        await asyncio.sleep(LATER + 0.05)  # the young ones' grace is over: looked at again
        return probe, attack, quiet, after_burst

    probe, attack, quiet, after_burst = asyncio.run(burst())
    assert after_burst <= REFUSAL_SLOTS + QUIET_SLOTS
    assert not probe.dropped
    assert all(c.dropped for c in settled) and all(c.dropped for c in attack)
    assert len(admission.waiting) == REFUSAL_SLOTS
    # The probe and the newest silent ones stay; the oldest silent one made way.
    assert [c.dropped for c in quiet] == [True] + [False] * (QUIET_SLOTS - 1)


def test_silent_connections_beyond_the_spare_slots_make_way_at_once(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    """A flood of connections that send nothing holds at most the slots and the spare
    slots: the oldest of the young ones beyond them make way at once."""
    admission = Admission(10, 1, None)  # type: ignore[arg-type]
    flood = [connection(pairs) for _ in range(REFUSAL_SLOTS + QUIET_SLOTS + 10)]
    for c in flood:
        admission.hold(c)
    assert len(admission.waiting) == REFUSAL_SLOTS + QUIET_SLOTS
    assert [c.dropped for c in flood] == [True] * 10 + [False] * (REFUSAL_SLOTS + QUIET_SLOTS)
