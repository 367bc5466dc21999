"""Intake in bulk (issue 28): the players' commands of one table that arrive together are
applied as one batch: one unit of work, one transaction, one caller.

Each command keeps everything it had alone: its request record (its idempotency key: a
resent id with the same body gets the first answer and changes nothing, also after a
restart; with another body ``idempotency-conflict``), its own result or typed error (one
player's refused command changes nothing and fails nobody else's), and every money
movement it makes names its own request (``audit-cli verify`` ties each one to its
record). What the batch shares is the cost: the aggregates are loaded once for all of
its commands (a seat and its session are touched by one player's bet and decision
alike), their events and records are written in one ``save`` (one table lock, one
COMMIT), and the caller waits once for all of them instead of once per command.

The batch is the group commit's (:func:`ledger.group_commit.run_batch`: the commands one
after another on one shared view, the careful path command by command if anything
collides), called here with the table's commands directly instead of through the
process's writer queue: the edge (:mod:`api.table_intake`) has already gathered them, so
the per-command queueing, waking and thread hand-offs of :meth:`Casino.command` are gone.
A round's first bets read nothing for the seat they open: the round's seat openings are
read once for the batch (:data:`ledger.tables.players.OPENINGS`), not one seat per query.

**Why a record per command, and not the seat's own event.** The seat's id derives from
(round, session): a seat can only recognise a message it carried in its own round. A bet
resent after its round ended (its answer lost with a connection) would find no trace on
the next round's seat and move money again. The request record's id derives from the
idempotency key alone, and its version-1 event is the store's one uniqueness guarantee
that holds across rounds, processes and restarts; it also keeps the first answer. So
each command keeps one record (one per message, not per chip: a REPEAT of four chips is
one record), and what the batch saves is everything else.

Where seamless wallets are configured, a command that may stake is not taken here: a
seamless session's debit is answered by the operator's wallet first, outside any batch
(:mod:`ledger.seamless.gate`); :func:`gated` tells the edge to send it down
:meth:`Casino.command` as before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from games.errors import GameRuleError
from ledger import metrics
from ledger.casino import Casino
from ledger.errors import LedgerError
from ledger.group_commit import Check, Pending, run_batch
from ledger.requests import body_digest, check_request_id, request_aggregate_id
from ledger.tables import commands as tc
from ledger.tables.arrivals import judged_at
from ledger.tables.players import OPENINGS


@dataclass(frozen=True)
class Item:
    """One player's command as it arrived: its idempotency key, the command, the
    caller's admission check (the closed-session check of the edges), and when it arrived
    (:meth:`ledger.tables.arrivals.Arrivals.enter`; its window is judged at that time,
    else when it runs)."""

    request_id: str
    cmd: tc.TableCommand[Any]
    check: Check | None = None
    arrived: datetime | None = None


@dataclass(frozen=True)
class Outcome:
    """One command's answer: its result, or the typed error it was refused with."""

    result: tc.SeatChanged | None = None
    error: BaseException | None = None

    def unwrap(self) -> tc.SeatChanged:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def gated(app: Casino, cmd: tc.TableCommand[Any]) -> bool:
    """Whether ``cmd`` may stake where seamless wallets are configured: the stake gate
    (:mod:`ledger.seamless.gate`) must see it first, outside any batch, so it goes
    through :meth:`Casino.command` alone."""
    gate = app.stake_gate
    return gate is not None and gate.wants(cmd)


def apply(app: Casino, items: Sequence[Item]) -> list[Outcome]:
    """Apply ``items`` as one batch (see the module docstring); one outcome per item, in
    order. Nothing is answered before the batch has committed."""
    started = time.perf_counter()
    outcomes: list[Outcome | None] = [None] * len(items)
    pendings: list[tuple[int, Pending]] = []
    for i, item in enumerate(items):
        cmd = item.cmd
        try:
            check_request_id(item.request_id)
            handler = app.handlers[type(cmd)]
            if item.arrived is not None:
                handler = judged_at(handler, item.arrived)
        except (LedgerError, KeyError) as e:
            outcomes[i] = Outcome(error=e)
            continue
        rid = request_aggregate_id(cmd.scope, item.request_id)
        p = Pending(handler, cmd, item.request_id, rid, body_digest(cmd.name, cmd.body()))
        p.check = item.check
        pendings.append((i, p))
    if pendings:
        batch = [p for _, p in pendings]
        token = OPENINGS.set({})  # the round's seat openings, read once for the batch
        try:
            run_batch(app, batch)
        except BaseException as e:  # never leave a command unanswered
            for p in batch:
                if not p.done:
                    p.finish(error=e)
        finally:
            OPENINGS.reset(token)
        metrics.BATCH_SIZE.observe(len(batch))
        for i, p in pendings:
            if not p.done:  # run_batch answers every command
                p.finish(error=RuntimeError(f"{p.cmd.name} was not answered"))
            outcomes[i] = Outcome(result=p.result, error=p.error)
    elapsed = time.perf_counter() - started
    out = [o if o is not None else Outcome(error=RuntimeError("not answered")) for o in outcomes]
    counted: dict[tuple[str, str], int] = {}
    for item, o in zip(items, out, strict=True):
        key = (item.cmd.name, _outcome(o.error))
        counted[key] = counted.get(key, 0) + 1
    for (name, outcome), n in counted.items():  # a labelled child looked up once a batch
        metrics.COMMANDS.labels(name, outcome).inc(n)
        latency = metrics.COMMAND_LATENCY.labels(name)
        for _ in range(n):
            latency.observe(elapsed)
    return out


def _outcome(error: BaseException | None) -> str:
    """The outcome label :meth:`Casino.command` gives a command."""
    if error is None:
        return "ok"
    if isinstance(error, LedgerError | GameRuleError):
        return error.code
    return "error"
