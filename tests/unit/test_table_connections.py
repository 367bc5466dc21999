"""The connection rule's commands (api.table_connections.Connections) queued for the
writer without a waiting thread (``send_soon``): at most one in flight per (session,
table), always toward the latest wanted state, and the waiting path when the writer
will not take one."""

from __future__ import annotations

from collections.abc import Callable

from api.table_connections import Connections


class Writer:
    """A writer that queues and lets the test say when each command is durable."""

    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.queued: list[tuple[str, str, bool]] = []
        self.callbacks: list[Callable[[], None]] = []

    def soon(self, session: str, table: str, connected: bool, done: Callable[[], None]) -> bool:
        if not self.accept:
            return False
        self.queued.append((session, table, connected))
        self.callbacks.append(done)
        return True

    def durable(self) -> None:
        self.callbacks.pop(0)()


def test_one_command_in_flight_per_seat_and_the_latest_state_wins() -> None:
    writer, now = Writer(), [0.0]
    waited: list[tuple[str, str, bool]] = []
    c = Connections(lambda *a: waited.append(a), 1.0, lambda: now[0], send_soon=writer.soon)
    c.opened("s1", "T1")
    c.opened("s2", "T1")
    assert writer.queued == [("s1", "T1", True), ("s2", "T1", True)]
    c.closed("s1", "T1")
    now[0] = 2.0
    assert c.due() == [("s1", "T1")]
    assert len(writer.queued) == 2  # s1's release waits for its hold to be durable
    writer.durable()  # s1's hold: the release follows
    assert writer.queued[-1] == ("s1", "T1", False)
    writer.durable()  # s2's hold: nothing more for s2
    writer.durable()  # s1's release
    assert len(writer.queued) == 3 and not writer.callbacks
    assert waited == []  # no thread waited for any of them
    c.opened("s1", "T1")  # back: a new hold, as none is in flight
    assert writer.queued[-1] == ("s1", "T1", True)


def test_a_state_undone_before_its_turn_is_not_sent() -> None:
    writer, now = Writer(), [0.0]
    c = Connections(lambda *a: None, 1.0, lambda: now[0], send_soon=writer.soon)
    c.opened("s1", "T1")
    c.closed("s1", "T1")
    now[0] = 2.0
    c.due()  # release wanted while the hold is in flight
    c.opened("s1", "T1")  # and connected again before the hold is durable
    writer.durable()
    assert writer.queued == [("s1", "T1", True)]  # the release was never sent


def test_the_waiting_path_when_the_writer_will_not_take_it() -> None:
    writer, waited = Writer(accept=False), []
    c = Connections(
        lambda *a: waited.append(a), 1.0, lambda: 0.0, submit=lambda fn: fn(), send_soon=writer.soon
    )
    c.opened("s1", "T1")
    assert waited == [("s1", "T1", True)] and writer.queued == []
