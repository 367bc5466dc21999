"""Helpers shared by the store-level tests: the raw rows, "refused and changed nothing", and
what a block leaves to the cyclic garbage collector."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from games.errors import GameRuleError
from ledger.errors import LedgerError

if TYPE_CHECKING:
    from ledger.casino import Casino
    from tests.conftest import Store


class ChosenSeeds:
    """Fake seed source: hands the ledger the given seeds in order, then fresh random ones."""

    def __init__(self, *seeds: bytes) -> None:
        self.seeds = list(seeds)

    def __call__(self) -> bytes:
        return self.seeds.pop(0) if self.seeds else os.urandom(32)


class ChosenDeals:
    """Fake card source (``bootstrap(cards=...)``): the chosen cards of each next round, in
    order, by deck label (``{"red-dog/deck": "7h 7d 7s"}``); then rounds dealt from seeds."""

    def __init__(self, *deals: Mapping[str, str]) -> None:
        self.deals = list(deals)

    def __call__(self) -> dict[str, list[str]] | None:
        if not self.deals:
            return None
        return {label: cards.split() for label, cards in self.deals.pop(0).items()}


def open_session(
    app: Casino, player: str = "ann", buy_in: int = 20_000, deposit: int = 1_000_000
) -> str:
    """The one way tests open a funded game session: account, deposit, buy-in."""
    app.open_account(f"open-{player}", player, "EUR")
    app.deposit(f"deposit-{player}", player, deposit)
    return str(app.open_session(f"buy-in-{player}", player, buy_in).session_id)


def raw_rows(store: Store) -> list[tuple[Any, ...]]:
    """Every stored event row, in notification order, exactly as the database holds it."""
    key = "rowid" if store.database_url is None else "notification_id"
    conn = store.connect()  # type: ignore[no-untyped-call]  # sqlite3 or psycopg connection
    try:
        cur = conn.execute(
            f"SELECT {key}, originator_id, originator_version, topic, state "
            f"FROM {store.table} ORDER BY {key}"
        )
        return [(n, str(o), v, t, bytes(s)) for n, o, v, t, s in cur.fetchall()]
    finally:
        conn.close()


def assert_refused(
    store: Store,
    error: type[Exception] | tuple[type[Exception], ...],
    command: Callable[..., Any],
    *args: Any,
) -> Any:
    """Run a command that must be refused with a typed error and must not touch the log."""
    before = raw_rows(store)
    with pytest.raises(error) as caught:
        command(*args)
    err = caught.value
    assert isinstance(err, LedgerError | GameRuleError), f"untyped error {err!r}"
    assert isinstance(err.code, str) and err.code not in ("", "ledger-error", "game-rule")
    assert err.message
    assert raw_rows(store) == before, f"{type(err).__name__} refusal changed the stored rows"
    return err


@contextmanager
def cyclic_garbage() -> Iterator[list[Any]]:
    """Collect first, then run the block with the collector off: on exit the list holds
    what a collection found unreachable, what reference counting alone left behind
    (``gc.DEBUG_SAVEALL``). Warm up before the block: what is made once is not garbage."""
    found: list[Any] = []
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
