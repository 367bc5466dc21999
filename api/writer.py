"""A command from the event loop, answered by the group-commit writer through a loop future.

:func:`command` is what a game action awaits (the REST routes of ``api/game.py``, the
game-action front of ``api/front.py``; the player's WebSocket can call it alike): the
command is queued for the next batch (``Casino.command_soon``) and the writer thread
answers it by resolving a future of the caller's loop (``call_soon_threadsafe``), once
the batch is durable. No worker thread waits for it, so a request costs the loop one
wake-up instead of a thread-pool round trip (anyio's hand-off: its capacity limiter,
its worker queue and its cancel scope).

The outcome is :meth:`Casino.command`'s: the same batch, the same result or error. A
command the stake gate must run around a seamless wallet's debit (it waits on the
wallet) takes :meth:`Casino.command` in a worker thread, as before. A caller cancelled
while its command is queued (the client went away) does not cancel the command: queued,
it is written and recorded like any other, and a retry with its request id is answered
from its record.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.concurrency import run_in_threadpool

if TYPE_CHECKING:
    from ledger.casino import Casino
    from ledger.commands import Command
    from ledger.group_commit import Check, Pending

R = TypeVar("R")


async def command(
    casino: Casino, request_id: str, cmd: Command[R], check: Check | None = None
) -> R:
    """``casino.command(request_id, cmd, check)`` awaited in the event loop."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Pending] = loop.create_future()

    def done(p: Pending) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_settle, answer, p)

    if not casino.command_soon(request_id, cmd, done, check):
        result: R = await run_in_threadpool(casino.command, request_id, cmd, check)
        return result
    p = await answer
    outcome: R = p.outcome()
    return outcome


def _settle(answer: asyncio.Future[Any], p: Pending) -> None:
    if not answer.done():  # a cancelled caller's future stays cancelled
        answer.set_result(p)
