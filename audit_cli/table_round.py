"""``audit-cli round CODE`` for a live blackjack table round (``IBJ-...``), on raw rows.

The round's rows, its shoe's and its seats' are read straight from the database. With the
public keys every row's signature and chain link is checked. Once the shoe's seed is
revealed (its last event, after the cut-card round), the seed is checked against the
commitment of the shoe's first event, every card of the round is re-derived from it, and
the pure engine re-plays every seat's recorded bets and decisions: any card, automatic
action or payout that differs is a finding. While the shoe is live the report says so and
shows the recorded cards only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.round_check import ROW_CHECKS, RoundFinding, RoundReport
from audit_cli.rows import Row, read_rows
from audit_cli.verify import trust_candidates, verify
from games.blackjack import RoundRecord, SeatPlan, play_round, shoe_from_seed
from games.cards import Card
from ledger import contracts, envelope
from ledger.tables.config import rules_of

PREFIX = "IBJ-"


@dataclass
class TableRoundReport(RoundReport):
    """A table round's check; with ``--session``, ``seat`` is that player's part of it:
    bets, decisions per step (the runner's automatic ones marked), hands and payouts."""

    seat: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = super().to_dict()
        if self.seat is not None:
            doc["seat"] = self.seat
        return doc


def is_table_code(code: str) -> bool:
    return code.upper().startswith(PREFIX)


def _doc(row: Row) -> dict[str, Any]:
    try:
        doc = json.loads(envelope.decode(row.state).payload)
    except (envelope.EnvelopeError, ValueError, TypeError, UnicodeError, AttributeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _step(row: Row) -> str:
    return row.topic.rsplit("/", 1)[-1].split("@")[0]


def _seat_plan(seat_id: str, rows: list[Row], automatic: dict[str, list[list[str]]]) -> Any:
    return seat_plan(seat_id, [(_step(r), _doc(r)) for r in rows], automatic)


def seat_plan(
    seat_id: str,
    events: list[tuple[str, dict[str, Any]]],
    automatic: dict[str, list[list[str]]],
) -> tuple[SeatPlan, dict[str, Any]]:
    """A seat's recorded inputs as the engine's replay takes them (a decision the runner
    overrode left out), and its recorded result."""
    chips: list[list[Any]] = []
    decisions: dict[int, str] = {}
    unfunded: set[int] = set()
    insurance = None
    result: dict[str, Any] = {}
    for step, doc in events:
        if step == "bet-placed":
            chips.append([doc["bet"], doc["amount"]])
        elif step == "bet-undone" and chips:
            chips.pop()
        elif step == "bets-cancelled":
            chips = []
        elif step == "decided":
            k = int(doc["step"])
            if seat_id in {a[0] for a in automatic.get(str(k), [])}:
                continue
            asked = doc["requested"] or doc["kind"]
            if doc["reason"] is not None:
                unfunded.add(k)
            if k == 0:
                insurance = asked == "insure"
            else:
                decisions[k] = asked
        elif step == "settled":
            result = dict(doc["result"])
    bets: dict[str, int] = {}
    for bet, amount in chips:
        bets[bet] = bets.get(bet, 0) + int(amount)
    sides = {b: a for b, a in bets.items() if b != "main"}
    plan = SeatPlan(seat_id, bets.get("main", 0), sides, insurance, decisions, frozenset(unfunded))
    return plan, result


def new_state() -> dict[str, Any]:
    """What a table round's events say, before its first (``apply_event``)."""
    return {
        "seats": [],
        "player_cards": [],
        "up": None,
        "hole": None,
        "step_cards": [],
        "draws": [],
        "automatic": {},
        "phase": "betting",
    }


def apply_event(state: dict[str, Any], step: str, doc: dict[str, Any]) -> None:
    if step == "dealt":
        state.update(seats=doc["seats"], player_cards=doc["player_cards"], up=doc["up"])
    elif step == "insurance-closed":
        state["automatic"]["0"] = doc["automatic"]
        state["hole"] = doc["hole"]
    elif step == "step-closed":
        state["automatic"][str(doc["closed"])] = doc["automatic"]
        if doc["card"] is not None:
            state["step_cards"].append(doc["card"])
    elif step == "dealer-played":
        state.update(hole=doc["hole"], draws=doc["draws"])
    if "phase" in doc:
        state["phase"] = doc["phase"]
    if step == "settled":
        state["phase"] = "settled"
    if step == "voided":
        state["phase"] = "voided"


def check_table_round(
    db: str,
    code: str,
    public_keys: dict[str, Ed25519PublicKey] | None,
    session: str | None = None,
) -> TableRoundReport:
    """The round's check on raw rows; with ``session``, that player's seat too."""
    report = TableRoundReport(code)
    rows = list(read_rows(db, skip_malformed=True))
    opened = next(
        (
            r
            for r in rows
            if r.topic == contracts.TABLE_ROUND_OPENED and _doc(r).get("code") == code
        ),
        None,
    )
    if opened is None:
        report.status = "missing"
        report.findings.append(RoundFinding("round", 0, "code", f"no table round {code!r}"))
        return report
    rid = opened.originator_id
    head = _doc(opened)
    round_rows = [r for r in rows if r.originator_id == rid]
    shoe_rows = [r for r in rows if r.originator_id == head["shoe_id"]]
    seat_ids = [
        r.originator_id
        for r in rows
        if r.topic == contracts.SEAT_OPENED and _doc(r).get("round_id") == rid
    ]
    seat_rows = {s: [r for r in rows if r.originator_id == s] for s in seat_ids}
    mine = round_rows + shoe_rows + [r for s in seat_ids for r in seat_rows[s]]
    if public_keys is not None:
        report.signatures_checked = True
        # The trust rows give the log id every signature binds and the keys the log names.
        learned = trust_candidates(rows)
        for f in verify(
            sorted(mine), public_keys, jobs=1, learned=learned, reexecute=False
        ).findings:
            if f.check in ROW_CHECKS:
                report.findings.append(RoundFinding("row", f.version or 0, f.check, f.message))
    state = new_state()
    for row in round_rows:
        doc, step = _doc(row), _step(row)
        report.steps.append(
            {
                "version": row.version,
                "step": step,
                **{
                    k: doc[k]
                    for k in (
                        "at",
                        "phase",
                        "card",
                        "closed",
                        "player_cards",
                        "up",
                        "hole",
                        "draws",
                        "automatic",
                        "totals",
                        "reason",
                        "incident_id",
                    )
                    if k in doc
                },
            }
        )
        apply_event(state, step, doc)
    report.status = state["phase"]
    report.steps.insert(
        0,
        {
            "version": 0,
            "step": "summary",
            "seats": len(state["seats"]),
            "player_cards": state["player_cards"],
            "dealer_cards": [c for c in [state["up"], state["hole"], *state["draws"]] if c],
            "step_cards": state["step_cards"],
        },
    )
    shoe_docs = {_step(r): _doc(r) for r in shoe_rows}
    revealed = shoe_docs.get("revealed")
    rules = rules_of(head["config"])
    s = int(head["start"])
    shoe: Sequence[Card] | None = None
    if revealed is None:
        report.status = f"{state['phase']} (shoe live: the cards re-derive once it is revealed)"
    else:
        seed = bytes.fromhex(revealed["seed"])
        if hashlib.sha256(seed).hexdigest() != shoe_docs.get("shuffled", {}).get("commitment"):
            report.findings.append(
                RoundFinding("shoe", 0, "seed", "the seed does not match the commitment")
            )
            return report
        shoe = shoe_from_seed(rules, seed)
        report.rederived = True
    plans, results = [], {}
    for sid in state["seats"]:
        plan, result = _seat_plan(sid, seat_rows.get(sid, []), state["automatic"])
        plans.append(plan)
        results[sid] = result
    replay = None
    if state["player_cards"] and state["phase"] != "voided":
        replay = _replay(report, rules, shoe if shoe is not None else shown(state, s), s, plans)
    if shoe is not None and state["player_cards"]:
        _compare_cards(report, state, shoe, s, replay)
    if replay is not None and (shoe is not None or state["phase"] == "settled"):
        # Once every card is shown (or the seed is revealed) the engine re-plays every
        # seat's recorded bets and decisions: each payout must be the engine's.
        for settlement in replay.settlements:
            recorded = results.get(settlement.seat_id, {}).get("returned")
            if recorded != settlement.returned:
                report.findings.append(
                    RoundFinding(
                        "seat",
                        0,
                        f"payout {settlement.seat_id}",
                        "differs from the engine",
                        recorded,
                        settlement.returned,
                    )
                )
    if session is not None:
        report.seat = _seat_view(report, rows, rid, session, seat_rows, state, replay)
    _money(report, code, sorted(mine), rows)
    return report


def _money(report: TableRoundReport, code: str, mine: list[Row], rows: list[Row]) -> None:
    """Every seat's recorded hands, stakes and payouts and the round's totals against the
    engine, and every seat's money on its session, as ``verify`` re-executes them
    (:mod:`audit_cli.reexec_table`)."""
    from audit_cli.reexec import MONEY_TOPICS, move_of
    from audit_cli.reexec_table import Tables

    tables = Tables()
    accounts: dict[str, str] = {}
    moves = []
    for row in mine:
        doc = _doc(row)
        if doc:
            tables.fact((row.notification_id, row.originator_id, row.version, row.topic, doc))
    for row in rows:
        if row.topic == contracts.SESSION_OPENED:
            account = _doc(row).get("account_id")
            if isinstance(account, dict):
                account = account.get("_data_")
            accounts[row.originator_id] = str(UUID(str(account))) if account else ""
        elif row.topic in MONEY_TOPICS:
            move = move_of(row, _doc(row))
            if move is not None and move.code == code:
                moves.append(move)
    expects, findings = tables.finish()
    seats = expects.get(code)
    findings = [*findings, *tables.compare(code, seats, moves, accounts)]
    for f in findings:
        report.findings.append(
            RoundFinding("money", f.version or 0, str(getattr(f, "kind", "")), f.message)
        )


def shown(state: dict[str, Any], start: int) -> list[Card]:
    """The shoe as far as the round has shown it: the positions from ``start`` are the
    first player card, the up card, the second player card, the hole card, each step's
    card, then the dealer's draws (the engine's dealing order)."""
    known = [state["player_cards"][0], state["up"], state["player_cards"][1]]
    if state["hole"] is not None:
        known += [state["hole"], *state["step_cards"], *state["draws"]]
    cards = [Card.parse(c) for c in known]
    return [cards[0]] * start + cards


def _replay(
    report: TableRoundReport,
    rules: Any,
    shoe: Sequence[Card],
    start: int,
    plans: list[SeatPlan],
) -> RoundRecord | None:
    try:
        return play_round(rules, shoe, start, plans)
    except IndexError:
        return None  # a round still open has not shown the cards it needs yet
    except Exception as e:  # a recorded decision the engine refuses is a finding
        report.findings.append(RoundFinding("replay", 0, "decisions", f"the engine refuses: {e}"))
        return None


def _compare_cards(
    report: TableRoundReport,
    state: dict[str, Any],
    shoe: Sequence[Card],
    s: int,
    replay: RoundRecord | None,
) -> None:
    shown = {s: state["player_cards"][0], s + 1: state["up"], s + 2: state["player_cards"][1]}
    for pos, card in shown.items():
        if str(shoe[pos]) != card:
            report.findings.append(
                RoundFinding(
                    "dealt", 0, f"card {pos}", "differs from the shoe", card, str(shoe[pos])
                )
            )
    if replay is None:
        return
    derived_steps = [str(x.card) for x in replay.steps if x.card is not None]
    if derived_steps != state["step_cards"]:
        report.findings.append(
            RoundFinding(
                "step-closed", 0, "cards", "step cards differ", state["step_cards"], derived_steps
            )
        )
    dealer = [c for c in [state["up"], state["hole"], *state["draws"]] if c]
    derived_dealer = [str(c) for c in replay.shared.dealer_cards]
    if dealer != derived_dealer:
        report.findings.append(
            RoundFinding("dealer-played", 0, "cards", "dealer cards differ", dealer, derived_dealer)
        )


def _seat_view(
    report: TableRoundReport,
    rows: list[Row],
    rid: str,
    session: str,
    seat_rows: dict[str, list[Row]],
    state: dict[str, Any],
    replay: RoundRecord | None,
) -> dict[str, Any] | None:
    """``--session``: one player's bets, decisions per step (automatic ones marked),
    hands and payouts, from that seat's rows (and the engine's replay of them)."""
    opened = next(
        (
            r
            for r in rows
            if r.topic == contracts.SEAT_OPENED
            and _doc(r).get("round_id") == rid
            and str(_doc(r).get("session_id")) == session
        ),
        None,
    )
    if opened is None:
        report.findings.append(
            RoundFinding("seat", 0, "session", f"session {session} has no seat in {report.code}")
        )
        return None
    sid = opened.originator_id
    head = _doc(opened)
    chips: list[list[Any]] = []
    decisions: dict[str, dict[str, Any]] = {}
    view: dict[str, Any] = {
        "seat_id": sid,
        "session_id": session,
        "player_id": head.get("player_id"),
        "status": "open",
        "bets": {},
        "chips": chips,
        "decisions": decisions,
        "hands": [],
        "result": None,
        "staked": 0,
        "paid": 0,
    }
    for row in seat_rows.get(sid, []):
        doc, step = _doc(row), _step(row)
        if step == "bet-placed":
            chips.append([doc["bet"], doc["amount"], doc.get("via")])
            view["staked"] += int(doc["amount"])
            view["status"] = "open"  # as the ledger's seat: a chip (again) opens it
        elif step == "bet-undone" and chips:
            chips.pop()
            view["staked"] -= int(doc["amount"])
            if not chips:  # every chip taken back: no bet, not part of the round
                view["status"] = "no-bet"
        elif step == "bets-cancelled":
            view["status"] = "cancelled"
            view["staked"] -= int(doc["refunded"])
        elif step == "decided":
            decisions[str(doc["step"])] = {
                "decision": doc["kind"],
                "requested": doc["requested"],
                "automatic": doc["reason"],  # seed 002's fallback for an unfunded choice
                "cost": doc["cost"],
                "paid": doc["paid"],
            }
            view["staked"] += int(doc["cost"])
            view["paid"] += int(doc["paid"])
        elif step == "settled":
            view.update(status="settled", result=doc["result"])
            view["paid"] += int(doc["credited"])
            view["staked"] -= int(doc["refunded"])
        elif step == "voided":
            view.update(status="voided", void=doc)
    for k, actions in state["automatic"].items():
        for who, kind, reason in actions:
            if who == sid:
                late = decisions.get(k)
                decisions[k] = {"decision": kind, "requested": None, "automatic": reason}
                if late is not None:
                    decisions[k]["late"] = late  # landed after the step closed: not applied
    view["decisions"] = dict(sorted(decisions.items(), key=lambda kv: int(kv[0])))
    for bet, amount, _ in chips:
        view["bets"][bet] = view["bets"].get(bet, 0) + int(amount)
    if replay is not None and sid in state["seats"]:
        i = state["seats"].index(sid)
        seat = replay.seats[i]
        settlement = replay.settlements[i]
        view["hands"] = [
            {
                "cards": [str(c) for c in h.cards],
                "stake": h.stake,
                "doubled": h.doubled,
                "split": h.split,
                "outcome": r.outcome.value,
                "payout": r.payout,
            }
            for h, r in zip(seat.hands, settlement.hands, strict=True)
        ]
        view["engine"] = {"staked": settlement.staked, "returned": settlement.returned}
        recorded = view["result"] or {}
        if view["status"] == "settled" and recorded.get("hands") != [
            [r.outcome.value, r.stake, r.payout] for r in settlement.hands
        ]:
            report.findings.append(
                RoundFinding(
                    "seat",
                    0,
                    f"hands {sid}",
                    "differ from the engine",
                    recorded.get("hands"),
                    [[r.outcome.value, r.stake, r.payout] for r in settlement.hands],
                )
            )
    return view


CARD_FIELDS = frozenset(
    {"player_cards", "up", "hole", "draws", "card", "dealer_cards", "step_cards", "cards"}
)


def glyphs(key: str, value: Any) -> Any:
    """Cards as every other round shows them (``Q♥``, not ``Qh``)."""
    if key not in CARD_FIELDS or value is None:
        return value
    if isinstance(value, str):
        return Card.parse(value).glyph
    return [Card.parse(c).glyph for c in value]
