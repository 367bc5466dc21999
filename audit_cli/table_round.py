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
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.round_check import ROW_CHECKS, RoundFinding, RoundReport
from audit_cli.rows import Row, read_rows
from audit_cli.verify import trust_candidates, verify
from games.blackjack import SeatPlan, play_round, shoe_from_seed
from ledger import contracts, envelope
from ledger.tables.table import rules_of

PREFIX = "IBJ-"


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
    chips: list[list[Any]] = []
    decisions: dict[int, str] = {}
    unfunded: set[int] = set()
    insurance = None
    result: dict[str, Any] = {}
    for row in rows:
        doc, step = _doc(row), _step(row)
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


def check_table_round(
    db: str, code: str, public_keys: dict[str, Ed25519PublicKey] | None
) -> RoundReport:
    report = RoundReport(code)
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
        for f in verify(sorted(mine), public_keys, jobs=1, learned=learned).findings:
            if f.check in ROW_CHECKS:
                report.findings.append(RoundFinding("row", f.version or 0, f.check, f.message))
    state: dict[str, Any] = {
        "seats": [],
        "player_cards": [],
        "up": None,
        "hole": None,
        "step_cards": [],
        "draws": [],
        "automatic": {},
        "phase": "betting",
    }
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
    if revealed is None:
        report.status = f"{state['phase']} (shoe live: the cards re-derive once it is revealed)"
        return report
    seed = bytes.fromhex(revealed["seed"])
    if hashlib.sha256(seed).hexdigest() != shoe_docs.get("shuffled", {}).get("commitment"):
        report.findings.append(
            RoundFinding("shoe", 0, "seed", "the seed does not match the commitment")
        )
        return report
    rules = rules_of(head["config"])
    shoe = shoe_from_seed(rules, seed)
    report.rederived = True
    s = int(head["start"])
    if not state["player_cards"]:
        return report
    shown = {s: state["player_cards"][0], s + 1: state["up"], s + 2: state["player_cards"][1]}
    for pos, card in shown.items():
        if str(shoe[pos]) != card:
            report.findings.append(
                RoundFinding(
                    "dealt", 0, f"card {pos}", "differs from the shoe", card, str(shoe[pos])
                )
            )
    if state["phase"] == "voided":
        return report
    plans, results = [], {}
    for sid in state["seats"]:
        plan, result = _seat_plan(sid, seat_rows.get(sid, []), state["automatic"])
        plans.append(plan)
        results[sid] = result
    try:
        replay = play_round(rules, shoe, s, plans)
    except Exception as e:  # a recorded decision the engine refuses is a finding
        report.findings.append(RoundFinding("replay", 0, "decisions", f"the engine refuses: {e}"))
        return report
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
    return report


def print_report(report: RoundReport, out: Any, as_json: bool) -> int:
    """Human (or ``--json``) output of a table round's check; 0 if it passes, else 1."""
    from rich.markup import escape

    from audit_cli.output import FoldingTable

    if as_json:
        out.print_json(json.dumps(report.to_dict(), default=str))
        return 0 if report.ok else 1
    table = FoldingTable(title=f"table round {report.code} ({report.status})")
    for col in ("#", "step", "details"):
        table.add_column(col)
    for s in report.steps:
        details = {k: v for k, v in s.items() if k not in ("version", "step")}
        table.add_row(str(s["version"]), s["step"], json.dumps(details, default=str))
    out.print(table)
    if not report.ok:
        for f in report.findings:
            out.print(f"[red]MISMATCH[/red] {escape(f.text())}", highlight=False)
        return 1
    if report.rederived:
        out.print(
            "[green]OK[/green]: every card and payout re-derives from the revealed shoe seed."
        )
    else:
        out.print("[yellow]shoe live[/yellow]: the seed is revealed after the cut-card round.")
    return 0
