"""The live tables' handlers composed for :func:`ledger.bootstrap.bootstrap`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from ledger import contracts
from ledger.commands import Route
from ledger.errors import SessionBusy
from ledger.tables import commands as tc
from ledger.tables.advance import CODE_PREFIX, Runner
from ledger.tables.betting import Betting
from ledger.tables.operator import Operator
from ledger.unit_of_work import UnitOfWork


class Tables(Betting, Runner, Operator):
    """Every table handler over one shoe cache (each part is a :class:`TableBase`)."""


def seat_openings(app: Any, after: int) -> Iterator[Notification]:
    """The notifications of seat openings after a notification id, in log order."""
    start = after + 1
    while True:
        page = app.recorder.select_notifications(
            start=start, limit=1000, topics=[contracts.SEAT_OPENED]
        )
        yield from page
        if len(page) < 1000:
            return
        start = page[-1].id + 1


def seat_index(app: Any) -> Callable[[int], list[UUID]]:
    """Seat aggregates opened after a notification id, read from the application's log
    (the opening events' topic), in notification order."""

    def index(after: int) -> list[UUID]:
        out: list[UUID] = []
        out.extend(n.originator_id for n in seat_openings(app, after))  # type: ignore[misc]
        return out

    return index


def last_position(app: Any) -> Callable[[], int]:
    def position() -> int:
        return int(app.recorder.max_notification_id() or 0)

    return position


def routes(tables: Tables) -> list[Route[Any, Any]]:
    """Every table command with its handler (mypy checks each pair's types)."""
    return [
        tc.CreateTable.handled_by(tables.create),
        tc.ConfigureTable.handled_by(tables.configure),
        tc.PauseTable.handled_by(tables.pause),
        tc.ResumeTable.handled_by(tables.resume),
        tc.VoidTableRound.handled_by(tables.void),
        tc.OpenRound.handled_by(tables.open_round),
        tc.StartBetting.handled_by(tables.start_betting),
        tc.DealRound.handled_by(tables.deal),
        tc.CloseInsurance.handled_by(tables.close_insurance),
        tc.CloseStep.handled_by(tables.close_step),
        tc.PlayDealer.handled_by(tables.play_dealer),
        tc.SettleBatch.handled_by(tables.settle_batch),
        tc.FinishRound.handled_by(tables.finish_round),
        tc.PlaceBet.handled_by(tables.bet),
        tc.UndoBet.handled_by(tables.undo),
        tc.RepeatBets.handled_by(tables.repeat),
        tc.DoubleBets.handled_by(tables.double_bets),
        tc.AllSideBets.handled_by(tables.all_side_bets),
        tc.TableDecide.handled_by(tables.decide),
        tc.Connect.handled_by(tables.connect),
        tc.Disconnect.handled_by(tables.disconnect),
    ]


def guard_close(inner: Callable[[UnitOfWork, Any], dict[str, Any]]) -> Callable[..., Any]:
    """Closing a session seated in a live round is refused (``session-busy``): the round
    finishes by itself (the runner decides for absent players, seed 002) and settles into
    the session; the operator closes it after. Other sessions close as before."""

    def close(uow: UnitOfWork, cmd: Any) -> dict[str, Any]:
        session = uow.session(cmd.session_id)
        if session.open_round is not None and session.open_round.startswith(CODE_PREFIX + "-"):
            raise SessionBusy(
                "the session is seated in a live blackjack round; it settles by itself",
                session_id=session.id,
                game_code=session.open_round,
            )
        return inner(uow, cmd)

    return close
