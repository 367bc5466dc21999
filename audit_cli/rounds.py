"""Dispute tools on the raw log: a round's timeline re-derived from its revealed seed.

Reads rows directly (no application). Every card and payout is recomputed by the pure
engine from the seed and the recorded decisions; any difference is flagged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from audit_cli.rows import Row, read_rows
from ledger import envelope
from ledger.play import GameAdapter
from ledger.red_dog import RedDogAdapter
from ledger.rounds import round_id_for


def adapters() -> dict[str, GameAdapter]:
    found: dict[str, GameAdapter] = {"red-dog": RedDogAdapter()}
    try:
        from ledger.video_poker import VideoPokerAdapter
    except ImportError:  # video poker not installed in this build
        return found
    found["video-poker"] = VideoPokerAdapter()
    return found


@dataclass
class RoundReport:
    code: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    status: str = "open"

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "status": self.status,
            "ok": self.ok,
            "problems": self.problems,
            "steps": self.steps,
        }


def _payload(row: Row) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc


def round_rows(db: str, code: str) -> list[Row]:
    rid = str(round_id_for(code))
    return [r for r in read_rows(db, skip_malformed=True) if r.originator_id == rid]


def check_round(db: str, code: str) -> RoundReport:
    rows = round_rows(db, code)
    report = RoundReport(code)
    if not rows:
        report.problems.append(f"no round with game code {code!r}")
        report.status = "missing"
        return report
    docs = [(r, _payload(r)) for r in rows]
    start = docs[0][1]
    params, decisions, views = start.get("params", {}), [], [start.get("view", {})]
    for row, doc in docs:
        step = row.topic.split("/")[2].split("@")[0]
        ts = doc.get("timestamp")
        when = ts.get("_data_") if isinstance(ts, dict) else ts
        entry = {"step": step, "version": row.version, "time": when}
        entry.update(
            {
                k: v
                for k, v in doc.items()
                if k
                in (
                    "decision",
                    "automatic",
                    "stake_added",
                    "view",
                    "payout",
                    "outcome",
                    "stake",
                    "game",
                    "variant",
                    "rules_version",
                    "paytable_id",
                    "commitment",
                    "reason",
                    "incident_id",
                    "refunded",
                    "reversed_win",
                    "seed",
                    "started_at",
                    "player_id",
                )
            }
        )
        report.steps.append(entry)
        if step == "acted":
            decisions.append(doc["decision"])
            views.append(doc.get("view", {}))
    last = docs[-1][1]
    seed_hex = last.get("seed")
    report.status = docs[-1][0].topic.split("/")[2].split("@")[0]
    if report.status not in ("settled", "voided"):
        report.status = "open"
        return report  # the seed stays sealed until the round ends
    if not seed_hex:
        report.problems.append("final event does not reveal the seed")
        return report
    seed = bytes.fromhex(seed_hex)
    if hashlib.sha256(seed).hexdigest() != start.get("commitment"):
        report.problems.append("revealed seed does not match the commitment SHA-256(seed)")
    adapter = adapters().get(start.get("game", ""))
    if adapter is None:
        report.problems.append(f"unknown game {start.get('game')!r}: cannot re-derive")
        return report
    # Re-derive every recorded view: after the deal, and after each decision.
    for i, recorded in enumerate(views):
        try:
            state = adapter.replay(params, decisions[:i], seed)
        except Exception as e:  # an engine refusal is itself a finding
            report.problems.append(f"step {i}: engine refuses the recorded decisions: {e}")
            return report
        if adapter.view(state) != recorded:
            report.problems.append(
                f"step {i}: recorded cards/state differ from the re-derived {adapter.view(state)}"
            )
    if report.status == "settled":
        state = adapter.replay(params, decisions, seed)
        if not adapter.settled(state):
            report.problems.append("recorded as settled but the engine says the round is open")
        elif last.get("payout") != adapter.payout(state):
            report.problems.append(
                f"recorded payout {last.get('payout')} but the engine pays {adapter.payout(state)}"
            )
        elif last.get("outcome") != adapter.outcome(state):
            report.problems.append(
                f"recorded outcome {last.get('outcome')} but the engine says "
                f"{adapter.outcome(state)}"
            )
    return report


def player_history(db: str, player_id: str) -> list[dict[str, Any]]:
    rounds: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for row in read_rows(db, skip_malformed=True):
        if not row.topic.startswith("croupier/round/"):
            continue
        doc = _payload(row)
        if row.topic == "croupier/round/started@1":
            if doc.get("player_id") != player_id:
                continue
            rounds[row.originator_id] = {
                "date": doc.get("started_at"),
                "game": doc.get("game"),
                "code": doc.get("code"),
                "stakes": doc.get("stake", 0),
                "wins": 0,
                "outcome": "open",
            }
            order.append(row.originator_id)
        elif row.originator_id in rounds:
            r = rounds[row.originator_id]
            if row.topic == "croupier/round/acted@1":
                r["stakes"] += doc.get("stake_added", 0)
            elif row.topic == "croupier/round/settled@1":
                r.update(wins=doc.get("payout", 0), outcome=doc.get("outcome"))
            elif row.topic == "croupier/round/voided@1":
                r.update(
                    wins=0,
                    outcome="voided",
                    void_reason=doc.get("reason"),
                    incident_id=doc.get("incident_id"),
                )
    return [rounds[o] for o in order]


def is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True
