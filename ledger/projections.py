"""Read models rebuilt from the log: account history, game history, last-10 recall.

Held in memory and brought up to date from the notification log on every query, so they
are always derivable from the log alone (nothing is written around the event store).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ledger import contracts
from ledger.checkpoints import iter_notifications
from ledger.contracts import RoundStatus
from ledger.errors import RoundNotFound
from ledger.rounds import round_id_for
from ledger.tables import account_rows

if TYPE_CHECKING:
    from ledger.ports import LogApp

ROUND_TOPIC = contracts.ROUND_PREFIX


class History:
    def __init__(self, app: LogApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._last = 0
        self._rounds: dict[str, dict[str, Any]] = {}
        self._by_player: dict[str, list[str]] = defaultdict(list)
        self._by_session: dict[str, list[str]] = defaultdict(list)
        self._code_by_id: dict[Any, str] = {}
        self._closed_sessions: set[str] = set()
        self._seats = account_rows.SeatRows()
        """The live tables' rows (one per seat), keyed in the indexes by seat id."""

    def catch_up(self) -> None:
        with self._lock:
            for note in iter_notifications(self.app, self._last):
                self._last = note.id
                if note.topic.startswith(ROUND_TOPIC):
                    self._apply(note.topic, self.app.mapper.to_domain_event(note))
                elif account_rows.wanted(note.topic):
                    self._apply_table(note.topic, self.app.mapper.to_domain_event(note))
                elif note.topic == contracts.SESSION_CLOSED:
                    # A void after this lands on the account (ledger.play.Rounds.void).
                    self._closed_sessions.add(str(note.originator_id))

    def _apply(self, topic: str, e: Any) -> None:
        if topic == contracts.ROUND_STARTED:
            self._rounds[e.code] = {
                "code": e.code,
                "game": e.game,
                "variant": e.variant,
                "date": e.started_at,
                "started_at": e.started_at,
                "player_id": e.player_id,
                "session_id": e.session_id,
                "stakes": e.stake,
                "wins": 0,
                "refunded": 0,
                "reversed_win": 0,
                "net": -e.stake,
                "landed_on": None,
                "outcome": "open",
                "status": RoundStatus.OPEN,
                "currency": e.currency,
            }
            self._code_by_id[e.originator_id] = e.code
            self._by_player[e.player_id].append(e.code)
            self._by_session[e.session_id].append(e.code)
            return
        code = self._code_of(e.originator_id)
        if code is None:
            return
        r = self._rounds[code]
        if topic == contracts.ROUND_ACTED:
            r["stakes"] += e.stake_added
        elif topic == contracts.ROUND_SETTLED:
            r.update(wins=e.payout, outcome=e.outcome, status=RoundStatus.SETTLED)
        elif topic == contracts.ROUND_VOIDED:
            # No win stands (wins 0); the stakes stay as played with their refund beside
            # them, and the win credited at settlement shows as reversed. The round's net
            # is what it did to the balance: 0 (credit and reversal cancel out).
            closed = r["session_id"] in self._closed_sessions
            r.update(
                outcome="voided",
                status=RoundStatus.VOIDED,
                wins=0,
                refunded=e.refunded,
                reversed_win=e.reversed_win,
                landed_on="account" if closed else "session",
                void_reason=e.reason,
                incident_id=e.incident_id,
            )
        r["net"] = r["wins"] - r["stakes"] + r["refunded"]

    def _apply_table(self, topic: str, e: Any) -> None:
        row = self._seats.apply(topic, e.originator_id, vars(e), self._closed_sessions)
        if row is not None:
            key = str(e.originator_id)
            self._by_player[row["player_id"]].append(key)
            self._by_session[row["session_id"]].append(key)

    def _rows(self, keys: list[str], limit: int | None) -> list[dict[str, Any]]:
        """The rows of ``keys`` newest first (a round by its code, a seat by its id);
        a seat whose chips were all taken back played nothing and is left out."""
        out: list[dict[str, Any]] = []
        for key in reversed(keys):
            if limit is not None and len(out) >= limit:
                break
            row = self._rounds.get(key) or self._seats.row(key)
            if row is not None and (key in self._rounds or account_rows.played(row)):
                out.append(dict(row, bets=dict(row["bets"])) if "bets" in row else dict(row))
        return out

    def _code_of(self, round_id: Any) -> str | None:
        return self._code_by_id.get(round_id)

    def account_history(self, player_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Date, game, code, stakes, wins, refund and reversed win of a void (and where it
        landed), net and outcome of each of the player's rounds, newest first; a live
        table's rows (one per seat, :mod:`ledger.tables.account_rows`) also carry the
        table and the bets by type."""
        self.catch_up()
        return self._rows(self._by_player.get(player_id, []), limit)

    def last_games(self, session_id: str, n: int = 10) -> list[dict[str, Any]]:
        """The "last 10 games" recall for a game session, newest first."""
        self.catch_up()
        return self._rows(self._by_session.get(str(session_id), []), n)

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
