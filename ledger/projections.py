"""Read models served from the store: account history, game history, last-10 recall.

Nothing is held in memory between queries (memory stays bounded however long the server
runs), and every query reads the log as it is now, so a history served by one worker
shows the rounds every other worker wrote. Each query reads only what it lists, newest
first, through the verifying event store (signature and chain checked on every read):

- a session's rounds are its ``RoundOpened`` events, read backwards in pages;
- a player's sessions come from the account's ``SessionFunded`` / ``SessionReturned``
  events, read backwards; the sessions' round streams are merged newest first by the time
  each round opened (a session returned at time T holds no round after T, so older
  sessions are only read once the merge reaches their return);
- each listed round is its ``Round`` aggregate (the repository's bounded cache); a live
  table's round (``IBJ-…``) is the player's seat in it, folded from the seat's events by
  :mod:`ledger.tables.account_rows` (one row per seat, with the bets by type).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.utils import get_topic

from ledger.accounts import Account, GameSession, account_id_for
from ledger.contracts import RoundStatus
from ledger.errors import RoundNotFound
from ledger.rounds import Round, round_id_for
from ledger.tables import account_rows
from ledger.tables.aggregates import TableRoundCode, round_code_id_for, seat_id_for

if TYPE_CHECKING:
    from ledger.ports import LogApp

PAGE = 64  # events read per page, newest first
# The account's events naming a session (classes made by the @event decorator).
SESSION_MOVES = (vars(Account)["SessionFunded"], vars(Account)["SessionReturned"])


class History:
    def __init__(self, app: LogApp) -> None:
        self.app = app

    def account_history(self, player_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Date, game, code, stakes, wins, refund and reversed win of a void (and where it
        landed), net and outcome of each of the player's rounds, newest first; a live
        table's rows also carry the table and the bets by type. A seat whose every chip
        was taken back played nothing and has no row."""
        codes = self._player_codes(player_id)
        return list(_take(self._rows(codes), limit))

    def last_games(self, session_id: str, n: int = 10) -> list[dict[str, Any]]:
        """The "last 10 games" recall for a game session, newest first."""
        sid = _uuid(session_id)
        codes = ((code, sid) for _, code in self._session_codes(sid))
        return list(_take(self._rows(codes), n))

    def _rows(self, codes: Iterator[tuple[str, UUID]]) -> Iterator[dict[str, Any]]:
        for code, session_id in codes:
            row = self._seat_row(code, session_id) if code.startswith("IBJ-") else self._row(code)
            if row is not None:
                yield row

    def timeline(self, code: str) -> list[dict[str, Any]]:
        """Every step of one round with its time: the game history of the round."""
        rid = round_id_for(code)
        steps = []
        for e in self.app.events.get(rid):
            doc = {
                k: v
                for k, v in vars(e).items()
                if k not in ("originator_id", "originator_topic", "sealed_seed")
            }
            doc["step"] = type(e).__name__.lower()
            doc["timestamp"] = getattr(e, "timestamp").isoformat()  # noqa: B009  # Aggregate events carry it; the protocol type does not
            steps.append(doc)
        if not steps:
            raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
        return steps

    # -- reading the log newest first ---------------------------------------------------

    def _backwards(self, aggregate_id: UUID) -> Iterator[Any]:
        """An aggregate's events, newest first, read (and verified) a page at a time."""
        lte: int | None = None
        while lte is None or lte > 0:
            page = list(self.app.events.get(aggregate_id, desc=True, limit=PAGE, lte=lte))
            if not page:
                return
            yield from page
            lte = page[-1].originator_version - 1

    def _session_codes(self, session_id: UUID) -> Iterator[tuple[datetime, str]]:
        """(time opened, game code) of a session's rounds, newest first."""
        for e in self._backwards(session_id):
            if isinstance(e, GameSession.RoundOpened):
                yield e.timestamp, e.game_code

    def _player_codes(self, player_id: str) -> Iterator[tuple[str, UUID]]:
        """(game code, session id) of every round of the player's sessions, newest first."""
        account_id = account_id_for(player_id)
        account = self.app.find(Account, account_id)
        if account is None:
            return
        merge: list[tuple[float, int, str, UUID, Iterator[tuple[datetime, str]]]] = []
        added: set[str] = set()
        order = 0

        def add(session_id: str) -> None:
            nonlocal order
            if session_id in added:
                return
            added.add(session_id)
            sid = _uuid(session_id)
            stream = self._session_codes(sid)
            head = next(stream, None)
            if head is not None:
                order += 1  # later additions are older sessions: ties go to the newer
                heapq.heappush(merge, (-head[0].timestamp(), order, head[1], sid, stream))

        for session_id in account.open_sessions:  # rounds up to now: read them first
            add(str(session_id))
        returns = self._backwards(account_id)
        horizon: float | None = float("inf")  # no unread session has a round after this
        while merge or horizon is not None:
            if horizon is not None and (not merge or -merge[0][0] < horizon):
                # A session returned later than the newest round merged so far may hold
                # newer rounds: read the account further back first.
                e = next(returns, None)
                if e is None:
                    horizon = None
                    continue
                horizon = e.timestamp.timestamp()
                if isinstance(e, SESSION_MOVES):
                    add(e.session_id)
                continue
            _, n, code, sid, stream = heapq.heappop(merge)
            yield code, sid
            head = next(stream, None)
            if head is not None:
                heapq.heappush(merge, (-head[0].timestamp(), n, head[1], sid, stream))

    def _row(self, code: str) -> dict[str, Any]:
        rnd = self.app.find(Round, round_id_for(code))
        if rnd is None:
            raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
        status = rnd.status
        row: dict[str, Any] = {
            "code": rnd.code,
            "game": rnd.game,
            "variant": rnd.variant,
            "date": rnd.started_at,
            "started_at": rnd.started_at,
            "player_id": rnd.player_id,
            "session_id": rnd.session_id,
            "stakes": rnd.staked,
            "wins": rnd.payout if status == RoundStatus.SETTLED else 0,
            "refunded": 0,
            "reversed_win": 0,
            "landed_on": None,
            "outcome": "open" if status == RoundStatus.OPEN else rnd.outcome,
            "status": status,
            "currency": rnd.currency,
        }
        if status == RoundStatus.VOIDED:
            # No win stands (wins 0); the stakes stay as played with their refund beside
            # them, and the win credited at settlement shows as reversed. The round's net
            # is what it did to the balance: 0 (credit and reversal cancel out). A void
            # after the session closed landed on the account (ledger.play.Rounds.void).
            account = self.app.find(Account, account_id_for(rnd.player_id))
            on_account = account is not None and rnd.code in account.voided_rounds
            row.update(
                refunded=rnd.refunded,
                reversed_win=rnd.reversed_win,
                landed_on="account" if on_account else "session",
                void_reason=rnd.void_reason,
                incident_id=rnd.incident_id,
            )
        row["net"] = row["wins"] - row["stakes"] + row["refunded"]
        return row

    def _seat_row(self, code: str, session_id: UUID) -> dict[str, Any] | None:
        """The session's seat in the table round ``code``, folded from the round's opening
        and the seat's events (None for a seat that played nothing)."""
        index = self.app.find(TableRoundCode, round_code_id_for(code))
        if not isinstance(index, TableRoundCode):
            raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
        round_id = UUID(index.round_id)
        seat_id = seat_id_for(round_id, session_id)
        # A void after the session closed landed on the account (ledger.tables.operator).
        closed: set[str] = set()
        session = self.app.find(GameSession, session_id)
        account = self.app.find(Account, session.account_id) if session is not None else None
        if account is not None and code in account.voided_rounds:
            closed.add(str(session_id))
        fold = account_rows.SeatRows()
        for e in self.app.events.get(round_id, limit=1):
            fold.apply(get_topic(type(e)), round_id, vars(e), closed)
        for e in self.app.events.get(seat_id):
            fold.apply(get_topic(type(e)), seat_id, vars(e), closed)
        row = fold.row(str(seat_id))
        return dict(row, bets=dict(row["bets"])) if row and account_rows.played(row) else None


def _take(rows: Iterator[dict[str, Any]], limit: int | None) -> Iterator[dict[str, Any]]:
    for n, row in enumerate(rows):
        if limit is not None and n >= limit:
            return
        yield row


def _uuid(value: str | UUID) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))
