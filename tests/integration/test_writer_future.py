"""Commands from the event loop (``api.writer.command`` over ``Casino.command_soon``) are
answered by the group-commit writer as ``Casino.command`` answers them: the same results
and errors, batched with commands of waiting threads, nothing answered early."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api import writer
from ledger.errors import IdempotencyConflict, InsufficientFunds, InvalidRequest
from ledger.requests import Request, request_aggregate_id
from ledger.results import AccountMoved
from tests.conftest import Store
from tests.helpers import cyclic_garbage
from tests.integration.test_group_commit import funded, writer_held
from tests.integration.test_ledger_rules import count_topic

DEPOSITED = "croupier/account/deposited@1"


def test_loop_commands_get_the_results_and_errors_of_command(store: Store) -> None:
    app = store.open()
    funded(app, "ann")
    from ledger import commands as c

    async def play() -> list[Any]:
        calls = [
            writer.command(app, "d1", c.Deposit("ann", 100)),
            writer.command(app, "w1", c.Withdraw("ann", 150)),  # more than there is
            writer.command(app, "d1", c.Deposit("ann", 100)),  # a retry of d1
            writer.command(app, "d1", c.Deposit("ann", 5)),  # d1 for another body
            writer.command(app, "w2", c.Withdraw("ann", 40)),
        ]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(play())
    assert outcomes[0] == AccountMoved(player_id="ann", balance=100)
    assert isinstance(outcomes[1], InsufficientFunds)
    assert outcomes[2] == outcomes[0]
    assert isinstance(outcomes[3], IdempotencyConflict)
    assert outcomes[4] == AccountMoved(player_id="ann", balance=60)
    assert app.account_balance("ann") == 60
    assert count_topic(store, DEPOSITED) == 1
    assert app.find(Request, request_aggregate_id("operator", "w1")) is None  # refused


def test_a_malformed_request_id_is_refused_before_anything_is_queued(store: Store) -> None:
    app = store.open()
    funded(app, "ann")
    from ledger import commands as c

    async def play() -> None:
        await writer.command(app, "", c.Deposit("ann", 100))  # an empty id

    try:
        asyncio.run(play())
    except InvalidRequest:
        pass
    else:
        raise AssertionError("a malformed request id was accepted")
    assert app._waiting == []
    assert app.account_balance("ann") == 0


def test_loop_commands_and_waiting_threads_share_one_batch(store: Store) -> None:
    app = store.open()
    funded(app, "ann")
    from ledger import commands as c

    before = app.batches

    async def play(submit: Any) -> list[Any]:
        loop_call = asyncio.ensure_future(writer.command(app, "d2", c.Deposit("ann", 7)))
        while len(app._waiting) < 1:
            await asyncio.sleep(0.001)
        outcomes: list[Any] = submit(lambda: app.deposit("d3", "ann", 5))  # a thread's
        assert not loop_call.done()  # nothing answered while the writer is held
        app._hand_over()  # release the writer: the queue is written, as one batch
        return [await loop_call, outcomes]

    with writer_held(app) as submit:
        answered, outcomes = asyncio.run(play(submit))
    assert answered == AccountMoved(player_id="ann", balance=7)
    assert outcomes[0] == AccountMoved(player_id="ann", balance=12)
    assert app.batches == before + 1
    assert app.account_balance("ann") == 12


def test_a_loop_command_leaves_no_garbage_for_the_collector(store: Store) -> None:
    """Each answered command is freed by reference counting alone: no cycle among its
    future, its callbacks and its pending record that only the cyclic collector would
    free (at a few hundred commands a second those cycles were the collector's pauses)."""

    app = store.open()
    funded(app, "ann")
    from ledger import commands as c

    async def play() -> None:
        for k in range(20):
            await writer.command(app, f"g{k}", c.Deposit("ann", 1))

    async def more() -> None:
        for k in range(20):
            await writer.command(app, f"h{k}", c.Deposit("ann", 1))

    asyncio.run(play())  # the writer thread and the loop's machinery made once
    with cyclic_garbage() as garbage:
        asyncio.run(more())
    left = [type(o).__name__ for o in garbage if type(o).__name__ in ("Pending", "Future")]
    assert app.account_balance("ann") == 40
    assert left == []


def test_a_refused_command_leaves_no_garbage_for_the_collector(store: Store) -> None:
    """A refusal's traceback keeps the frames it passed through, and they kept the
    command's pending record, which kept the error: a cycle per refused command (an
    outsider's refused requests, the table runner's not-yet-due actions)."""

    app = store.open()
    funded(app, "ann")
    from ledger import commands as c

    async def refused(tag: str) -> None:
        for k in range(5):
            try:
                await writer.command(app, f"{tag}{k}", c.Withdraw("ann", 10**9))
            except InsufficientFunds:
                pass
            else:
                raise AssertionError("a withdrawal beyond the balance was taken")

    def refused_in_thread(tag: str) -> None:
        for k in range(5):
            with pytest.raises(InsufficientFunds):
                app.command(f"{tag}{k}", c.Withdraw("ann", 10**9))

    asyncio.run(refused("warm"))
    with cyclic_garbage() as garbage:
        asyncio.run(refused("loop"))
        refused_in_thread("thread")
    left = sorted({type(o).__name__ for o in garbage if type(o).__name__ in KEPT})
    assert app.account_balance("ann") == 0
    assert left == []


KEPT = ("Pending", "InsufficientFunds", "BatchView", "UnitOfWork", "Future")
"""What a refused command's cycle held (with the frames and tracebacks around them)."""
