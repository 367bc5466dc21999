"""Re-execution of live blackjack table rounds in ``audit-cli verify`` (see
:mod:`audit_cli.reexec`): each seat's money against what the engine pays it.

A table round's events, its seats' and its shoe's are spread over the log (a round lasts
its betting time and every step), so the parent gathers them here in log order. Once a
round has ended (and the rows of the transaction that ended it are in: one chunk later),
the engine re-plays it from the cards the round shows (``audit_cli.table_round.shown``)
and every dealt seat's recorded bets and decisions; the round's and seats' rows are then
dropped and each seat is left as one :class:`SeatExpect`. When the shoe's seed is
revealed its commitment is checked and every card its rounds showed is compared with the
shoe; rounds of a shoe still live at the end of the log are counted as pending.

Per seat, what the session's movements net to must be what the engine gives: stakes
debited less refunds = what the seat staked (0 for a seat voided or whose bets were
cancelled), wins credited less reversals = what it returned.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from audit_cli.findings import Finding

Fact = tuple[int, str, int, str, dict[str, Any]]
ROUND, SEAT, SHOE = (
    "croupier/blackjack/round/",
    "croupier/blackjack/seat/",
    "croupier/blackjack/shoe/",
)


class SeatExpect(NamedTuple):
    """What the engine gives one seat of a table round."""

    seat_id: str
    session: str
    status: str
    """``settled``, ``voided``, ``cancelled`` (its bets given back), ``no-bet`` (every chip
    taken back: not part of the round) or ``open``."""
    staked: int
    returned: int
    row: int


def _step(topic: str) -> str:
    return topic.rsplit("/", 1)[-1].split("@", 1)[0]


class Tables:
    """Table rounds, their seats and shoes, joined in log order."""

    def __init__(self) -> None:
        self.rounds: dict[str, dict[str, Any]] = {}
        self.seats: dict[str, dict[str, Any]] = {}
        self.ended: list[tuple[str, int]] = []
        self.chunk = 0
        self.expects: dict[str, list[SeatExpect]] = {}
        self.pending: set[str] = set()
        """Codes of rounds whose money is not compared: not ended."""
        self.shown: dict[str, list[tuple[str, int, list[str], Any]]] = defaultdict(list)
        """Live shoe id -> (code, first position, cards shown from it, the table's config)
        of its re-played rounds: their cards are checked when its seed is revealed."""
        self.commitments: dict[str, str] = {}
        self.revealed: dict[str, bytes] = {}
        self.findings: list[Finding] = []
        self.flagged: set[str] = set()
        """Codes of rounds with a finding of their own: never dropped before the end."""
        self.fresh: list[str] = []
        """Codes re-played since the parent last looked (it may drop them once matched)."""
        self.stats = {"table_rounds_reexecuted": 0, "table_rounds_shoe_live": 0}

    def fact(self, fact: Fact) -> None:
        n, oid, _, topic, doc = fact
        step = _step(topic)
        if topic.startswith(ROUND):
            if step == "opened":
                self.rounds[oid] = {"head": doc, "events": [], "seats": [], "row": n}
                return
            rnd = self.rounds.get(oid)
            if rnd is None:
                return  # a round whose opening is missing: the chain checks report it
            rnd["events"].append((step, doc))
            rnd["row"] = n
            if step in ("settled", "voided") and not rnd.get("ended"):
                rnd["ended"] = True
                self.ended.append((oid, self.chunk))
        elif topic.startswith(SEAT):
            if step == "opened":
                self.seats[oid] = {"head": doc, "events": [], "row": n}
                rnd = self.rounds.get(str(doc.get("round_id")))
                if rnd is not None:
                    rnd["seats"].append(oid)
                return
            seat = self.seats.get(oid)
            if seat is not None:
                seat["events"].append((step, doc))
                seat["row"] = n
        elif step == "shuffled":
            self.commitments[oid] = str(doc.get("commitment"))
        elif step == "revealed":
            self._revealed(oid, doc, n)

    def chunk_done(self) -> None:
        """Rounds that ended before the chunk just fed are whole: re-play them."""
        self.chunk += 1
        while self.ended and self.ended[0][1] < self.chunk - 1:
            self._replay(self.ended.pop(0)[0])

    def finish(self) -> tuple[dict[str, list[SeatExpect] | None], list[Finding]]:
        """Every table round's seats (None: not ended, its money not compared)."""
        while self.ended:
            self._replay(self.ended.pop(0)[0])
        for rnd in self.rounds.values():
            self.pending.add(str(rnd["head"].get("code")))
            for sid in rnd["seats"]:
                self.seats.pop(sid, None)
        self.stats["table_rounds_pending"] = len(self.pending)
        for rounds in self.shown.values():
            self.stats["table_rounds_shoe_live"] += len(rounds)
        out: dict[str, list[SeatExpect] | None] = dict(self.expects)
        out.update({code: None for code in self.pending})
        return out, self.findings

    # -- one ended round ---------------------------------------------------------------

    def _replay(self, rid: str) -> None:
        from audit_cli.table_round import apply_event, new_state, seat_plan, shown
        from games.blackjack import play_round
        from ledger.tables.config import rules_of

        rnd = self.rounds.pop(rid)
        head = rnd["head"]
        code = str(head.get("code"))
        seats = {sid: self.seats.pop(sid) for sid in rnd["seats"] if sid in self.seats}
        state = new_state()
        totals: dict[str, Any] | None = None
        for step, doc in rnd["events"]:
            apply_event(state, step, doc)
            if step == "settled":
                totals = doc.get("totals")
        start = int(head.get("start", 0))
        settlements: dict[str, Any] = {}
        recorded: dict[str, dict[str, Any]] = {}
        if state["phase"] == "settled" and state["player_cards"]:
            try:
                rules = rules_of(head["config"])
                plans = []
                for sid in state["seats"]:
                    plan, result = seat_plan(
                        sid, seats.get(sid, {}).get("events", []), state["automatic"]
                    )
                    plans.append(plan)
                    recorded[sid] = result
                replay = play_round(rules, shown(state, start), start, plans)
            except Exception as e:  # a recorded round the engine refuses is a finding
                self._find(code, rnd["row"], f"cannot be re-executed: the engine refuses: {e!r}")
                self.pending.add(code)
                return
            settlements = {s.seat_id: s for s in replay.settlements}
            self.stats["table_rounds_reexecuted"] += 1
            self._check_results(code, rnd["row"], recorded, settlements, totals)
            shoe_id = str(head.get("shoe_id"))
            entry = (code, start, _cards(state), head["config"])
            if shoe_id in self.revealed:
                self._check_cards(self.revealed[shoe_id], entry, rnd["row"])
            else:
                self.shown[shoe_id].append(entry)
        expects = []
        for sid, seat in seats.items():
            status = _status(seat["events"])
            staked = returned = 0
            if status == "settled":
                settlement = settlements.get(sid)
                if settlement is None:
                    self._find(code, seat["row"], f"seat {sid} settled but was not dealt in")
                else:
                    staked, returned = settlement.staked, settlement.returned
            session = str(seat["head"].get("session_id"))
            expects.append(SeatExpect(sid, session, status, staked, returned, seat["row"]))
        self.expects[code] = expects
        self.fresh.append(code)

    def _check_results(
        self,
        code: str,
        row: int,
        recorded: dict[str, dict[str, Any]],
        settlements: dict[str, Any],
        totals: dict[str, Any] | None,
    ) -> None:
        for sid, s in settlements.items():
            result = recorded.get(sid) or {}
            hands = [[h.outcome.value, h.stake, h.payout] for h in s.hands]
            if (result.get("staked"), result.get("returned"), result.get("hands")) != (
                s.staked,
                s.returned,
                hands,
            ):
                self._find(
                    code,
                    row,
                    f"seat {sid}: recorded result staked {result.get('staked')}, returned "
                    f"{result.get('returned')}, hands {result.get('hands')}; the engine gives "
                    f"staked {s.staked}, returned {s.returned}, hands {hands}",
                    result.get("returned"),
                    s.returned,
                )
        staked = sum(s.staked for s in settlements.values())
        returned = sum(s.returned for s in settlements.values())
        if totals is not None and (totals.get("staked"), totals.get("returned")) != (
            staked,
            returned,
        ):
            self._find(
                code,
                row,
                f"round totals recorded staked {totals.get('staked')}, returned "
                f"{totals.get('returned')}; the engine gives staked {staked}, returned {returned}",
                totals.get("returned"),
                returned,
            )

    def _revealed(self, shoe_id: str, doc: dict[str, Any], row: int) -> None:
        """The shoe's seed: its commitment, then every card its rounds showed."""
        rounds = self.shown.pop(shoe_id, [])
        try:
            seed = bytes.fromhex(str(doc.get("seed")))
        except ValueError:
            seed = b""
        if hashlib.sha256(seed).hexdigest() != self.commitments.pop(shoe_id, None):
            self._find(
                str(doc.get("last_round")),
                row,
                f"shoe {shoe_id}: the revealed seed does not match its commitment",
            )
            return
        self.revealed[shoe_id] = seed
        for entry in rounds:
            self._check_cards(seed, entry, row)

    def _check_cards(self, seed: bytes, entry: tuple[str, int, list[str], Any], row: int) -> None:
        from games.blackjack import shoe_from_seed
        from ledger.tables.config import rules_of

        code, start, cards, config = entry
        shoe = shoe_from_seed(rules_of(config), seed)
        dealt = [str(c) for c in shoe[start : start + len(cards)]]
        if dealt != cards:
            self._find(code, row, f"cards shown {cards} but the shoe's seed deals {dealt}")
        self.stats["table_rounds_cards_checked"] = (
            self.stats.get("table_rounds_cards_checked", 0) + 1
        )

    def _find(
        self, code: str, row: int, text: str, recorded: Any = None, expected: Any = None
    ) -> None:
        from audit_cli.reexec import MoneyFinding

        self.flagged.add(code)
        self.findings.append(
            MoneyFinding(
                "reexec-table",
                f"{code}: {text}",
                row,
                game_code=code,
                kind="round",
                recorded=recorded if type(recorded) is int else None,
                expected=expected if type(expected) is int else None,
            )
        )

    # -- the money -----------------------------------------------------------------------

    def compare(
        self,
        code: str,
        seats: list[SeatExpect] | None,
        moves: Iterable[Any],
        accounts: dict[str, str],
    ) -> list[Finding]:
        from audit_cli.reexec import REFUND, REVERSAL, STAKE, WIN, MoneyFinding

        if seats is None:
            return []  # not ended: pending
        by_session = {s.session: s for s in seats}
        by_account = {accounts.get(s.session): s for s in seats}
        nets: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        last: dict[tuple[str, int], Any] = {}
        found: list[Finding] = []
        for m in moves:
            seat = by_account.get(m.owner) if m.on_account else by_session.get(m.owner)
            if seat is None:
                found.append(
                    MoneyFinding(
                        "reexec-session",
                        f"{code}: {m.kind} of {m.amount} (row {m.row}) is on "
                        f"{'account' if m.on_account else 'session'} {m.owner}, which has no "
                        "seat in the round",
                        m.row,
                        m.owner,
                        m.version,
                        game_code=code,
                        kind=m.kind,
                        recorded=m.amount,
                        expected=0,
                    )
                )
                continue
            i, sign = {STAKE: (0, 1), REFUND: (0, -1), WIN: (1, 1), REVERSAL: (1, -1)}[m.kind]
            nets[seat.session][i] += sign * m.amount
            last[(seat.session, i)] = m
        for seat in seats:
            got = nets[seat.session]
            for i, kind, want in ((0, STAKE, seat.staked), (1, WIN, seat.returned)):
                if got[i] == want:
                    continue
                move = last.get((seat.session, i))
                what = "stakes less refunds" if i == 0 else "wins less reversals"
                where = f" (last row {move.row})" if move is not None else " (no movement)"
                found.append(
                    MoneyFinding(
                        "reexec-amount" if move is not None else "reexec-no-movement",
                        f"{code}: seat {seat.seat_id} of session {seat.session} ({seat.status}): "
                        f"{what} {got[i]}{where} but the rules give {want}",
                        move.row if move is not None else seat.row,
                        move.owner if move is not None else seat.seat_id,
                        move.version if move is not None else None,
                        game_code=code,
                        kind=kind,
                        recorded=got[i],
                        expected=want,
                        session_id=seat.session,
                    )
                )
        return found


def _status(events: list[tuple[str, dict[str, Any]]]) -> str:
    """The seat's status as the ledger's seat has it (``ledger.tables.aggregates``)."""
    status, chips = "open", 0
    for step, _ in events:
        if step in ("settled", "voided"):
            status = step
        elif step == "bets-cancelled":
            status, chips = "cancelled", 0
        elif step == "bet-placed":
            status, chips = "open", chips + 1
        elif step == "bet-undone" and chips:
            chips -= 1
            if not chips:  # every chip taken back: no bet, not part of the round
                status = "no-bet"
    return status


def _cards(state: dict[str, Any]) -> list[str]:
    """The cards the round showed, in the shoe's dealing order (``shown``)."""
    known = [state["player_cards"][0], state["up"], state["player_cards"][1]]
    if state["hole"] is not None:
        known += [state["hole"], *state["step_cards"], *state["draws"]]
    return [str(c) for c in known]
