"""The read side: projections of the signed log into view tables, kept with tracking.

One :class:`ReadSide` per application holds its projections (statement, wallet book,
daily totals). Queries read only the views; each says the log position it reflects, and
can ask for a position first (:meth:`ReadSide.ready`): the view is caught up to it by the
reader itself if the background runner (:mod:`ledger.readside.runner`) has not got there
yet, so a read never waits on a thread that may not run (a CLI, a test), and a process's
reads see its own writes. Design and figures: docs/read-models.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ledger.errors import PositionNotReached
from ledger.readside.commits import CommitFold, follow_commits
from ledger.readside.projection import Projection, Projector, Source, step_together
from ledger.readside.view import Query, Row, View

if TYPE_CHECKING:
    from ledger.ports import LogApp


def projectors() -> list[Projector]:
    from ledger.readside.statement import StatementProjector
    from ledger.readside.totals import TotalsProjector
    from ledger.readside.wallet import WalletProjector

    return [StatementProjector(), WalletProjector(), TotalsProjector()]


def views(datastore: Any, events_table: str) -> list[View]:
    """The views of every projection on a datastore (``croupier db init`` creates them)."""
    return [View(datastore, events_table, p.name, p.tables) for p in projectors()]


class ReadSide:
    """The application's projections, by name."""

    def __init__(self, app: LogApp, *, create_tables: bool = True) -> None:
        self.app = app
        source = Source(app)  # one read of the log for every view at the same position
        self.projections = {p.name: Projection(app, p, source=source) for p in projectors()}
        if create_tables:
            self.create_tables()
        self.commits: CommitFold | None = None
        """Folds each commit's events into the views in its transaction
        (:mod:`ledger.readside.commits`); None: the views' tables are not there."""
        first = next(iter(self.projections.values())).view
        names = [p.view.tracking_name for p in self.projections.values()]
        try:
            found = first.positions(names)[1]
        except Exception:  # no tables (a store made before the views)
            found = {}
        if set(found) == set(names):
            self.commits = follow_commits(self)

    def create_tables(self) -> None:
        for p in self.projections.values():
            p.view.create_tables()

    def __getitem__(self, name: str) -> Projection:
        return self.projections[name]

    def ready(self, name: str, at_least: int | None = None) -> int:
        """The view ``name`` brought to at least ``at_least`` (the log's head now when
        None); the position it reflects. A position beyond the log's head is refused at
        once with :class:`PositionNotReached`: a command's ``X-Log-Position`` is sent after
        its events are committed to the shared store, so every position a client was given
        is at or below the head any worker reads; one beyond it was never written, and
        waiting for the log to grow that far would only hold the request."""
        p = self.projections[name]
        head, position = p.state()
        target = head if at_least is None else at_least
        if position >= target:
            return position
        if target > head:
            raise PositionNotReached(
                f"the log has not reached position {at_least} (its head is {head})",
                position=head,
            )
        return p.catch_up(target)

    def read(
        self, name: str, at_least: int | None, queries: Sequence[Query]
    ) -> tuple[int, list[list[Row]]]:
        """The position the view ``name`` reflects and the rows of ``queries``, read with
        it: at least ``at_least`` (the log's head when None). The view is read first
        (one round trip on PostgreSQL); only if it is behind is it caught up
        (:meth:`ready`) and read again."""
        p = self.projections[name]
        for _ in range(3):
            head, position, rows = p.view.read(queries)
            target = head if at_least is None else at_least
            if position >= target:
                return position, rows
            if target > head:
                raise PositionNotReached(
                    f"the log has not reached position {at_least} (its head is {head})",
                    position=head,
                )
            p.catch_up(target)
        return position, rows  # a rebuild under way took the view back: what it holds

    def catch_up(self) -> int:
        """Every view brought to the log's head; the lowest position reached. Views at the
        same position step together (:func:`step_together`: one read of the log, one
        transaction); a view behind the others steps alone until it joins them."""
        views = list(self.projections.values())
        names = [p.view.tracking_name for p in views]
        head, found = views[0].view.positions(names)  # one query for the three
        if not found:  # no tracking row yet (the views' tables made elsewhere)
            head = views[0].head()
        first = True
        while True:
            if not first:  # the first pass reads the positions read with the head
                _, found = views[0].view.positions(names)
            first = False
            positions = [found.get(n, 0) for n in names]
            start = min(positions)
            if start >= head:
                return start
            behind = [p for p, at in zip(views, positions, strict=True) if at == start]
            if len(behind) == len(views):
                step_together(views, start, head)
            else:
                for p in behind:
                    p.step(head)
