"""No stacked retries (issue 29): a recorder call is tried at most twice, and only once
when no connection could be had at all, so a dead store is reported within the pool's
timeout instead of after ten attempts each waiting for it."""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import OperationalError
from psycopg_pool import PoolTimeout, TooManyRequests

from ledger.settings import Settings
from ledger.store import AppendOnlyPostgresRecorder, observed, once_more


class Flaky:
    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    @once_more
    def select(self, x: int) -> int:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return x


def wrapped(cause: BaseException) -> OperationalError:
    err = OperationalError(str(cause))
    err.__cause__ = cause  # as the library's get_connection raises it
    return err


def test_a_broken_connection_is_retried_once_on_a_fresh_one() -> None:
    f = Flaky(OperationalError("server closed the connection unexpectedly"))
    assert f.select(7) == 7 and f.calls == 2


def test_a_second_failure_is_not_retried_again() -> None:
    f = Flaky(*[OperationalError("terminating connection") for _ in range(3)])
    with pytest.raises(OperationalError):
        f.select(7)
    assert f.calls == 2


@pytest.mark.parametrize("cause", [PoolTimeout("no connection in 1 s"), TooManyRequests("full")])
@pytest.mark.requirement("GLI-19-FAILURE")
def test_no_connection_at_all_is_reported_at_once(cause: BaseException) -> None:
    f = Flaky(wrapped(cause))
    with pytest.raises(OperationalError):
        f.select(7)
    assert f.calls == 1


def test_the_library_retries_are_gone_from_every_recorder_call() -> None:
    for name in ("insert_events", "select_events", "select_notifications", "any_newer"):
        method: Any = getattr(AppendOnlyPostgresRecorder, name)
        if name == "insert_events":  # the read side's observer wraps the retried insert
            assert method.__code__ is observed(lambda self: None).__code__
            method = method.__wrapped__
        assert method.__code__ is once_more(lambda self: None).__code__, name


def test_the_pool_waits_are_bounded_from_the_first_connection() -> None:
    """A start waits at most the start's bound (a loaded database may take seconds to
    accept the tables' creation); ``Casino.serving`` then sets a request's bound."""
    env = Settings(
        database_url="postgresql://u@h/db", store_timeout_seconds=1.0, startup_timeout_seconds=7
    ).eventsourcing_env()
    assert env["POSTGRES_CONNECT_TIMEOUT"] == "7" and int(env["POSTGRES_MAX_WAITING"]) > 0
