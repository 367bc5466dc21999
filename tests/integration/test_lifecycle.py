"""Lifecycle rules of the application: storage failures, automatic completion, closing.

- A storage failure other than a version conflict is not contention: it surfaces at once
  as ``StorageUnavailable`` (logged with its cause), writes nothing, and is a 503
  ``storage-unavailable`` at the HTTP edge.
- An automatic completion that cannot finish the round raises and saves nothing.
- Garbage collection never writes a checkpoint: only ``close()`` (or ``seal()``) does.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from eventsourcing.persistence import OperationalError
from fastapi.testclient import TestClient

from api.app import create_app
from games.adapter import RoundTerms
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.commands import Route, SessionCommand
from ledger.contracts import CHECKPOINT_SEALED
from ledger.errors import AutoCompletionFailed, StorageUnavailable
from ledger.play import Rounds
from ledger.results import RoundPlayed
from ledger.unit_of_work import UnitOfWork
from tests.conftest import Store
from tests.helpers import assert_refused, raw_rows
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer


class FailingStore:
    """Fake recorder write: the database is gone (not a version conflict)."""

    def __init__(self, app: Casino) -> None:
        self.calls = 0
        self.app = app
        self.real = app.recorder.insert_events
        app.recorder.insert_events = self  # type: ignore[method-assign]  # the fake write

    def restore(self) -> None:
        """The disk is back (so the test's teardown can close the store)."""
        self.app.recorder.insert_events = self.real  # type: ignore[method-assign]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise OperationalError("disk I/O error")


def funded(app: Casino) -> str:
    app.open_account("open", "ann", "EUR")
    app.deposit("fund", "ann", 1_000)
    return str(app.open_session("buy-in", "ann", 500).session_id)


def test_a_storage_failure_is_storage_unavailable_at_once_and_writes_nothing(
    store: Store, app: Casino, caplog: pytest.LogCaptureFixture
) -> None:
    funded(app)
    failing = FailingStore(app)

    with caplog.at_level(logging.ERROR, logger="croupier"):
        err = assert_refused(store, StorageUnavailable, app.deposit, "again", "ann", 10)

    assert err.code == "storage-unavailable"
    assert failing.calls == 1, "a storage failure is not a version conflict: no retry"
    assert isinstance(err.__cause__, OperationalError)
    assert "disk I/O error" in caplog.text
    failing.restore()


def test_a_storage_failure_over_http_is_503_storage_unavailable(store: Store) -> None:
    casino = store.open(**CREDENTIALS)
    funded(casino)
    failing = FailingStore(casino)
    before = raw_rows(store)
    with TestClient(create_app(casino)) as client:
        r = client.post(
            "/v1/accounts/ann/deposits",
            json={"amount": 10},
            headers={**bearer(OPERATOR), "Idempotency-Key": "d-1"},
        )
    assert r.status_code == 503 and r.json()["code"] == "storage-unavailable"
    assert r.headers["Retry-After"] == "1"
    assert raw_rows(store) == before
    failing.restore()


# -- a game whose default action never ends its round ---------------------------------------


@dataclass(frozen=True)
class Endless:
    """A fake game: every decision keeps the round open."""

    game: ClassVar[str] = "endless"

    def read_params(self, doc: Any) -> int:
        return int(doc["bet"])

    def write_params(self, params: int) -> dict[str, Any]:
        return {"bet": params}

    def read_decision(self, wire: Sequence[Any]) -> str:
        return str(wire[0])

    def write_decision(self, decision: str) -> list[Any]:
        return [decision]

    def terms(self, params: int) -> RoundTerms:
        return RoundTerms("endless", "endless/1", "endless/none", "EN")

    def stake_of(self, params: int) -> int:
        return params

    def start(self, params: int, seed: bytes) -> int:
        return 0

    def apply(self, params: int, state: int, decision: str, seed: bytes) -> int:
        return state + 1

    def replay(self, params: int, decisions: Sequence[str], seed: bytes) -> int:
        return len(decisions)

    def default_decision(self, state: int) -> str:
        return "wait"

    def staked(self, state: int) -> int:
        return 0

    def settled(self, state: int) -> bool:
        return False

    def payout(self, state: int) -> int:
        return 0

    def outcome(self, state: int) -> str:
        return "open"

    def view(self, state: int) -> dict[str, Any]:
        return {"steps": state}


@dataclass(frozen=True)
class PlayEndless(SessionCommand[RoundPlayed]):
    name: ClassVar[str] = "endless_start"
    bet: int


def endless_handlers(rounds: Rounds) -> list[Route[Any, Any]]:
    def start(uow: UnitOfWork, cmd: PlayEndless) -> RoundPlayed:
        session = uow.session(cmd.session_id)
        return rounds.start(uow, session, Endless(), cmd.bet)

    return [PlayEndless.handled_by(start)]


def test_an_automatic_completion_that_cannot_finish_raises_and_saves_nothing(
    store: Store,
) -> None:
    app = bootstrap(
        store.settings(),
        store.keyring,
        games={"endless": Endless()},
        extra_handlers=endless_handlers,
    )
    store.apps.append(app)
    sid = funded(app)
    app.command("start", PlayEndless(sid, 100))

    err = assert_refused(store, AutoCompletionFailed, app.close_session, "close", sid)

    assert "still open" in err.message
    assert app.session_balance(sid) == 400 and not app.get_session(sid).closed


def test_garbage_collection_writes_no_checkpoint_but_close_does(store: Store) -> None:
    app = bootstrap(store.settings(), store.keyring)
    funded(app)

    def checkpoints() -> int:
        return sum(1 for row in raw_rows(store) if row[3] == CHECKPOINT_SEALED)

    del app
    gc.collect()
    assert checkpoints() == 0

    again = bootstrap(store.settings(), store.keyring)
    again.close()
    assert checkpoints() == 1
