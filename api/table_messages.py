"""What a live table's stream says: the table's log events turned into stream messages.

:class:`TableFold` reads the log in notification order and turns each event of one table
(its rounds and shoes, its seats, and the money those seats moved in their sessions) into
at most one :class:`Message`, whose ``position`` is the event's notification id: a table
message for every client, or a seat message for the one session it belongs to. The same
fold serves the live feed and a reconnect from an old ``Last-Event-ID``, so a message is
a function of the log alone.

Nothing is said that the log does not already show (issue 10): cards only as the table
round records them shown, the shoe's seed only in its ``Revealed`` event (once the shoe
is done; its sealed seed never), and no other seat's data: a table message counts the
seats and the automatic actions, it never names a seat or a session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from games.blackjack import Seat, options
from ledger import contracts
from ledger.casino import Casino
from ledger.chat import message_id
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableRoundCode,
    TableSeat,
    round_code_id_for,
    seat_id_for,
    shoe_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.config import rules_of
from ledger.tables.context import RoundStates, seat_of

ROUND_TYPES = {
    contracts.TABLE_ROUND_OPENED: "round-opened",
    contracts.TABLE_ROUND_BETTING_REOPENED: "betting-extended",
    contracts.TABLE_ROUND_BETTING_WAITING: "betting-waiting",
    contracts.TABLE_ROUND_DEALT: "bets-closed",
    contracts.TABLE_ROUND_INSURANCE_CLOSED: "insurance-closed",
    contracts.TABLE_ROUND_STEP_CLOSED: "step-closed",
    contracts.TABLE_ROUND_DEALER_PLAYED: "dealer-played",
    contracts.TABLE_ROUND_SETTLED: "round-settled",
    contracts.TABLE_ROUND_PAUSED: "table-paused",
    contracts.TABLE_ROUND_RESUMED: "table-resumed",
    contracts.TABLE_ROUND_VOIDED: "round-voided",
}
SHOE_TYPES = {contracts.SHOE_SHUFFLED: "shoe-shuffled", contracts.SHOE_REVEALED: "shoe-revealed"}
SEAT_TYPES = {
    contracts.SEAT_OPENED: "seat-opened",
    contracts.SEAT_BET_PLACED: "bet-accepted",
    contracts.SEAT_BET_UNDONE: "bet-undone",
    contracts.SEAT_BETS_CANCELLED: "bets-cancelled",
    contracts.SEAT_DECIDED: "decided",
    contracts.SEAT_CONNECTION: "connection",
    contracts.SEAT_SETTLED: "seat-settled",
    contracts.SEAT_VOIDED: "seat-voided",
}
MONEY_KINDS = {
    contracts.SESSION_STAKE_DEBITED: "stake",
    contracts.SESSION_WIN_CREDITED: "win",
    contracts.SESSION_ROUND_SETTLED: "win",
    contracts.SESSION_REFUNDED: "refund",
    contracts.SESSION_WIN_REVERSED: "reversal",
}
CHAT_TYPES = {contracts.CHAT_POSTED: "chat", contracts.CHAT_HIDDEN: "chat-hidden"}
"""The table chat (ledger/chat.py): table messages only the clients that show chat get."""
SETTINGS_TOPICS = (contracts.PLAYER_SETTINGS_OPENED, contracts.PLAYER_SETTINGS_CHANGED)
PLAYER_SETTINGS = "player-settings"
"""A message the feed keeps to itself: a player's ``show_chat`` changed (never sent)."""
TOPICS = [*ROUND_TYPES, *SHOE_TYPES, *SEAT_TYPES, *MONEY_KINDS, *CHAT_TYPES, *SETTINGS_TOPICS]
"""Every topic a table's stream reads (the log is selected by them)."""
KEPT_CODES = 4096
"""Game codes a fold remembers as its table's or not (every other game's stakes and wins
pass by it: kept without a bound, they would grow with every round played anywhere)."""
WINDOWS = ("bets-closed", "insurance-closed", "step-closed")
"""Table messages after which a seat may have new options."""


@dataclass(frozen=True)
class Message:
    position: int
    """The notification id of the event (the SSE ``id``); 0 for derived messages."""
    type: str
    data: dict[str, Any]
    session: str | None = None
    """The one session this message is for; None: every client of the table."""


def hands_of(seat: Seat) -> list[dict[str, Any]]:
    return [
        {
            "cards": [str(c) for c in h.cards],
            "total": h.total,
            "soft": h.soft,
            "stake": h.stake,
            "doubled": h.doubled,
            "split": h.split,
        }
        for h in seat.hands
    ]


def options_message(
    rnd: TableRound, record: TableSeat, states: RoundStates | None = None
) -> Message | None:
    """The seat's hands and the options it may take now (derived from the round and the
    seat as the log has them; no id: it is state, sent again after every reconnect).
    ``states``: the round's shared states, when the caller has them for many seats."""
    if record.status != "open" or not rnd.dealt_in(str(record.id)) or rnd.closed:
        return None
    st = states if states is not None else RoundStates(rnd, rules_of(rnd.config))
    seat = seat_of(rnd, st.rules, record, states=st)
    offered = options(st.shared, seat)
    return Message(
        0,
        "options",
        {
            "code": rnd.code,
            "phase": rnd.phase,
            "step": rnd.step,
            "deadline": rnd.deadline,
            "hands": hands_of(seat),
            "active": seat.active,
            "options": [{"decision": o.kind.value, "amount": o.amount} for o in offered],
        },
        record.session_id,
    )


class TableFold:
    """The table's state as far as the log has been read, and the messages it makes.

    ``only_session`` (a reconnect's replay) keeps that one session's seat messages and
    skips every other seat's event without decoding it."""

    def __init__(self, app: Casino, table: str, only_session: str | None = None) -> None:
        self.app = app
        self.table = table
        self.only_session = only_session
        found = app.find(Table, table_id_for(table))
        rounds = 0 if found is None else found.rounds
        shoes = 0 if found is None else found.shoes
        self.codes: dict[str, bool] = {}
        """Game code -> whether it is this table's (looked up once, then remembered)."""
        self.round_ids = {table_round_id_for(table, n): n for n in range(1, rounds + 2)}
        self.shoe_ids = {shoe_id_for(table, n): n for n in range(1, shoes + 2)}
        self.rounds: dict[UUID, TableRound] = {}
        self.seats: dict[UUID, TableSeat] = {}
        self.seat_sessions: dict[UUID, str | None] = {}
        """Seat id -> its session (None: a seat at another table)."""
        self.current: TableRound | None = None
        self.own_seats: set[UUID] = set()
        self._states: tuple[UUID, int, RoundStates] | None = None
        self._automatic: tuple[UUID, int, dict[str, list[tuple[int, str, str]]]] | None = None
        if only_session is not None:
            self.own_seats = {seat_id_for(rid, only_session) for rid in self.round_ids}

    # -- reading the log -----------------------------------------------------------------

    def read(self, after: int, upto: int, limit: int = 1000) -> tuple[list[Message], int]:
        """The messages of the events after ``after`` up to ``upto`` (at most ``limit``
        notifications read); and the position read to."""
        page = self.app.recorder.select_notifications(
            start=after + 1, limit=limit, stop=upto, topics=TOPICS
        )
        out: list[Message] = []
        for n in page:
            m = self.apply(n)
            if m is not None:
                out.append(m)
        reached = upto if len(page) < limit else page[-1].id
        return out, reached

    def apply(self, n: Notification) -> Message | None:
        topic = n.topic
        if topic in ROUND_TYPES:
            return self._round(n) if n.originator_id in self.round_ids else None
        if topic in SEAT_TYPES:
            return self._seat(n)
        if topic in MONEY_KINDS:
            return self._money(n)
        if topic in SHOE_TYPES and n.originator_id in self.shoe_ids:
            return self._shoe(n)
        if topic in CHAT_TYPES:
            return self._chat(n)
        if topic in SETTINGS_TOPICS and self.only_session is None:
            event = self._decode(n)
            data = {"settings_id": str(n.originator_id), "show_chat": event.settings["show_chat"]}
            return Message(n.id, PLAYER_SETTINGS, data, PLAYER_SETTINGS)
        return None

    def _chat(self, n: Notification) -> Message | None:
        """A chat message or a hide at this table: what every client that shows chat
        gets (the author's pseudonym, never the player id or the session)."""
        event = self._decode(n)
        if event.table != self.table:
            return None
        assert isinstance(n.originator_id, UUID)
        mid = message_id(n.originator_id, event.number)
        if n.topic == contracts.CHAT_POSTED:
            data = {"id": mid, "author": event.author, "text": event.text, "at": event.at}
            return Message(n.id, "chat", data)
        return Message(n.id, "chat-hidden", {"id": mid, "at": event.at})

    def _decode(self, n: Notification) -> Any:
        return self.app.mapper.to_domain_event(n)

    def _follow(self, known: dict[UUID, Any], n: Notification, cls: type[Any]) -> Any:
        """The aggregate's state just after this event: the fold's copy moved on by it,
        or (an aggregate first met here) the stored aggregate at that version."""
        oid = n.originator_id
        assert isinstance(oid, UUID)
        have = known.get(oid)
        if have is not None and have.version == n.originator_version - 1:
            agg = self._decode(n).mutate(have)
        elif n.originator_version == 1:
            agg = self._decode(n).mutate(None)
        else:
            agg = self.app.repository.get(oid, version=n.originator_version)
        assert isinstance(agg, cls)
        known[oid] = agg
        return agg

    def _round(self, n: Notification) -> Message:
        rnd: TableRound = self._follow(self.rounds, n, TableRound)
        kind = ROUND_TYPES[n.topic]
        if kind == "round-opened":
            self.round_ids[table_round_id_for(self.table, rnd.number + 1)] = rnd.number + 1
            self.codes[rnd.code] = True
            if self.only_session is not None:
                self.own_seats.add(seat_id_for(rnd.id, self.only_session))
            self._forget_before(rnd)
        if self.current is None or rnd.number >= self.current.number:
            self.current = rnd
        return Message(n.id, kind, round_data(kind, rnd))

    def _forget_before(self, rnd: TableRound) -> None:
        """Keep the state of this round and the one before (a void of an older round
        loads what it needs from the store)."""
        keep = {table_round_id_for(self.table, rnd.number - k) for k in (0, 1)}
        self.rounds = {k: v for k, v in self.rounds.items() if k in keep}
        self.seats = {k: v for k, v in self.seats.items() if UUID(v.round_id) in keep}
        self.seat_sessions = {k: v for k, v in self.seat_sessions.items() if k in self.seats}

    def _seat(self, n: Notification) -> Message | None:
        oid = n.originator_id
        assert isinstance(oid, UUID)
        if self.only_session is not None and oid not in self.own_seats:
            return None
        if self.seat_sessions.get(oid, "") is None:
            return None  # a seat at another table
        seat: TableSeat = self._follow(self.seats, n, TableSeat)
        if seat.table != self.table:
            self.seat_sessions[oid] = None
            del self.seats[oid]
            return None
        self.seat_sessions[oid] = seat.session_id
        kind = SEAT_TYPES[n.topic]
        return Message(n.id, kind, self._seat_data(kind, seat), seat.session_id)

    def _seat_data(self, kind: str, seat: TableSeat) -> dict[str, Any]:
        data: dict[str, Any] = {"code": seat.code}
        if kind in ("bet-accepted", "bet-undone"):
            bet, amount = seat.chips[-1] if kind == "bet-accepted" else (None, None)
            data.update(bets=seat.bets(), debited=seat.debited)
            if kind == "bet-accepted":
                data.update(bet=bet, amount=amount)
        elif kind == "bets-cancelled":
            data.update(status=seat.status, debited=seat.debited)
        elif kind == "decided":
            step = max(int(k) for k in seat.decisions)
            applied, requested, reason = seat.decisions[str(step)]
            data.update(step=step, kind=applied, requested=requested, reason=reason)
            data.update(debited=seat.debited, credited=seat.credited)
        elif kind == "connection":
            data.update(connected=seat.connected)
        elif kind == "seat-settled":
            data.update(result=dict(seat.result), decisions=self._decisions(seat))
        elif kind == "seat-voided":
            data.update(
                reason=seat.void_reason,
                incident_id=seat.incident_id,
                refunded=seat.refunded,
                reversed_win=seat.reversed_win,
            )
        return data

    def states_of(self, rnd: TableRound) -> RoundStates:
        """The round's shared states for replaying its seats, kept for its last version
        (every seat's ``options`` after a window goes through the same ones)."""
        kept = self._states
        if kept is None or kept[0] != rnd.id or kept[1] != rnd.version:
            kept = self._states = (rnd.id, rnd.version, RoundStates(rnd, rules_of(rnd.config)))
        return kept[2]

    def _automatic_of(self, rnd: TableRound) -> dict[str, list[tuple[int, str, str]]]:
        """Seat id -> the runner's automatic actions for it (step, kind, reason): one pass
        over the round's actions per round version, not one per seat settled."""
        kept = self._automatic
        if kept is None or kept[0] != rnd.id or kept[1] != rnd.version:
            index: dict[str, list[tuple[int, str, str]]] = {}
            for step, actions in rnd.automatic.items():
                for sid, kind, reason in actions:
                    index.setdefault(sid, []).append((int(step), kind, reason))
            kept = self._automatic = (rnd.id, rnd.version, index)
        return kept[2]

    def _decisions(self, seat: TableSeat) -> list[dict[str, Any]]:
        """Every decision of the seat, the runner's automatic ones (seed 002 timeouts)
        included: what a player who was away sees happened."""
        rnd = self.rounds.get(UUID(seat.round_id)) or self.app.find(TableRound, UUID(seat.round_id))
        out = {
            int(k): {"step": int(k), "kind": v[0], "automatic": v[2] is not None, "reason": v[2]}
            for k, v in seat.decisions.items()
        }
        if rnd is not None:
            for step, kind, reason in self._automatic_of(rnd).get(str(seat.id), []):
                out[step] = {"step": step, "kind": kind, "automatic": True, "reason": reason}
        return [out[k] for k in sorted(out)]

    def _money(self, n: Notification) -> Message | None:
        if self.only_session is not None and str(n.originator_id) != self.only_session:
            return None
        event = self._decode(n)
        code = getattr(event, "game_code", None)
        if not isinstance(code, str) or not self._ours(code):
            return None
        data = {
            "code": code,
            "movement": MONEY_KINDS[n.topic],
            "amount": event.amount,
            "balance": event.balance,
        }
        return Message(n.id, "balance", data, str(n.originator_id))

    def _ours(self, code: str) -> bool:
        known = self.codes.get(code)
        if known is None:
            index = self.app.find(TableRoundCode, round_code_id_for(code))
            known = isinstance(index, TableRoundCode) and index.table == self.table
            if len(self.codes) >= KEPT_CODES:
                self.codes.clear()  # looked up again when next seen
            self.codes[code] = known
        return known

    def _shoe(self, n: Notification) -> Message:
        event = self._decode(n)
        assert isinstance(n.originator_id, UUID)
        number = self.shoe_ids[n.originator_id]
        if n.topic == contracts.SHOE_SHUFFLED:
            self.shoe_ids[shoe_id_for(self.table, number + 1)] = number + 1
            data = {
                "shoe": number,
                "decks": event.decks,
                "commitment": event.commitment,
                "shuffled_at": event.shuffled_at,
            }
            return Message(n.id, "shoe-shuffled", data)
        # seed 002 / DESIGN §5.3: the seed is revealed once the shoe's last round settled
        data = {
            "shoe": number,
            "seed": event.seed,
            "rounds": event.rounds,
            "last_round": event.last_round,
        }
        return Message(n.id, "shoe-revealed", data)

    # -- the seats' options now ------------------------------------------------------------

    def options_for(self, sessions: Iterable[str]) -> list[Message]:
        """``options`` messages of the given sessions' seats in the current round."""
        rnd = self.current
        if rnd is None or rnd.up is None or rnd.closed:
            return []
        wanted = set(sessions)
        states = self.states_of(rnd)
        rid = str(rnd.id)
        out = []
        for seat in self.seats.values():
            if seat.session_id in wanted and seat.round_id == rid:
                m = options_message(rnd, seat, states)
                if m is not None:
                    out.append(m)
        return out


def round_data(kind: str, rnd: TableRound) -> dict[str, Any]:
    """A table message's fields: shared state only (counts, never seat ids)."""
    at = rnd.phases[-1][1] if rnd.phases else rnd.started_at
    data: dict[str, Any] = {"code": rnd.code, "number": rnd.number}
    window = {"phase": rnd.phase, "step": rnd.step, "deadline": rnd.deadline}
    if kind == "round-opened":
        data.update(shoe=rnd.shoe_number, shoe_position=rnd.start)
        data.update(started_at=rnd.started_at, deadline=rnd.deadline)
        data.update(limits=rnd.config["limits"], chip=rnd.config["chip"])
    elif kind == "betting-extended":
        # the timer starts again (a bet came while the round waited; in older logs, also
        # every window nobody bet in): bets until this deadline
        data.update(deadline=rnd.deadline)
    elif kind == "betting-waiting":
        # the window closed with no bet: the round stays open for bets, with no deadline
        data.update(at=rnd.waiting_since, deadline=None)
    elif kind == "bets-closed":
        data.update(at=at, seats=len(rnd.seats), player_cards=list(rnd.player_cards), up=rnd.up)
        data.update(window)
    elif kind == "insurance-closed":
        blackjack = rnd.hole is not None
        data.update(at=at, dealer_blackjack=blackjack, hole=rnd.hole, **window)
        data.update(automatic=len(rnd.automatic.get("0", [])))
    elif kind == "step-closed":
        closed = max(int(k) for k in rnd.automatic)
        card = rnd.step_cards[closed - 1] if len(rnd.step_cards) >= closed else None
        data.update(at=at, closed=closed, card=card, **window)
        data.update(automatic=len(rnd.automatic.get(str(closed), [])))
    elif kind == "dealer-played":
        data.update(at=at, hole=rnd.hole, draws=list(rnd.dealer_draws))
    elif kind == "round-settled":
        data.update(at=at, seats=rnd.settled_seats, shoe_done=rnd.shoe_done, **rnd.totals)
    elif kind == "table-paused":
        data.update(at=rnd.paused_at, **window)
    elif kind == "table-resumed":
        data.update(window)
    elif kind == "round-voided":
        data.update(at=at, reason=rnd.void_reason, incident_id=rnd.incident_id)
    return data
