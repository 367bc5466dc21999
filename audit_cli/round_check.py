"""Checking one round event by event: signature and chain link, then every recorded view,
decision, card and amount re-derived from the revealed seed (or, for a round whose first
event records chosen cards, from those cards: a finding of its own, since such a round is
not certified).

Signatures and chain links are the verifier's own row checks (:func:`audit_cli.verify.verify`
over the round's rows); the game fields are recomputed by the pure engine through the
game's adapter. Every difference names the event (step and version) and the field.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.rows import Row
from audit_cli.verify import trust_candidates, verify
from games import registry
from games.adapter import GameAdapter
from games.deal import ChosenCards, ChosenCardsError, Deal
from ledger import envelope

ROW_CHECKS = (
    "row-originator-id",
    "row-version",
    "row-topic",
    "envelope",
    "unknown-key",
    "signature",
    "chain-version",
    "chain-link",
)
"""The verifier's per-row checks that apply to one aggregate on its own."""

STEP_FIELDS = (
    "decision",
    "automatic",
    "stake_added",
    "view",
    "payout",
    "outcome",
    "stake",
    "staked",
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
    "session_id",
    "currency",
    "chosen_cards",
)


def adapters() -> dict[str, GameAdapter[Any, Any, Any]]:
    """Every registered game's adapter (the registry is the one list of games)."""
    return registry.adapters()


@dataclass(frozen=True)
class RoundFinding:
    """One difference: which event (step and version), which field, and what differs."""

    step: str
    version: int
    field: str
    message: str
    recorded: Any = None
    derived: Any = None

    def text(self) -> str:
        return f"{self.step} event (v{self.version}) {self.field}: {self.message}"


@dataclass
class RoundReport:
    code: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    findings: list[RoundFinding] = field(default_factory=list)
    status: str = "open"
    signatures_checked: bool = False
    rederived: bool = False
    """True when the seed was revealed and every event was compared with the engine."""
    money: list[Any] = field(default_factory=list)
    """The round's money compared with re-execution (``audit_cli.reexec``): what differs."""

    @property
    def problems(self) -> list[str]:
        return [f.text() for f in self.findings]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "status": self.status,
            "ok": self.ok,
            "signatures_checked": self.signatures_checked,
            "rederived": self.rederived,
            "problems": self.problems,
            "findings": [asdict(f) for f in self.findings],
            "steps": self.steps,
        }


def _step_name(row: Row) -> str:
    # "croupier/round/acted@1" -> "acted"
    return row.topic.rsplit("/", 1)[-1].split("@")[0]


def _decode(row: Row) -> dict[str, Any] | None:
    try:
        doc = json.loads(envelope.decode(row.state).payload)
    except (envelope.EnvelopeError, ValueError, TypeError, UnicodeError, AttributeError):
        return None
    return doc if isinstance(doc, dict) else None


def _time(doc: dict[str, Any]) -> Any:
    ts = doc.get("timestamp")
    return ts.get("_data_") if isinstance(ts, dict) else ts


def check_rows(
    code: str,
    rows: list[Row],
    public_keys: dict[str, Ed25519PublicKey] | None,
    trust_rows: list[Row] | None = None,
) -> RoundReport:
    """Check the rows of one round (all of its aggregate, in order). ``trust_rows`` are the
    log's key-history rows (genesis, rotations): they give the log id every signature
    binds and the keys the log itself names."""
    report = RoundReport(code)
    if not rows:
        report.status = "missing"
        missing = f"no round with game code {code!r}"
        report.findings.append(RoundFinding("round", 0, "code", missing))
        return report
    if public_keys is not None:
        report.signatures_checked = True
        steps_by_version = {r.version: _step_name(r) for r in rows}
        learned = trust_candidates(trust_rows or [])
        for f in verify(rows, public_keys, jobs=1, learned=learned, reexecute=False).findings:
            if f.check in ROW_CHECKS:
                v = f.version or 0
                report.findings.append(
                    RoundFinding(steps_by_version.get(v, "?"), v, f.check, f.message)
                )
    events: list[tuple[Row, dict[str, Any]]] = []
    for row in rows:
        doc = _decode(row)
        if doc is None:
            if public_keys is None:  # else the verifier has reported it already
                report.findings.append(
                    RoundFinding(_step_name(row), row.version, "envelope", "not a signed event")
                )
            continue
        entry: dict[str, Any] = {"step": _step_name(row), "version": row.version}
        entry["time"] = _time(doc)
        entry.update({k: doc[k] for k in STEP_FIELDS if k in doc})
        report.steps.append(entry)
        events.append((row, doc))
    if not events:
        report.status = "missing"
        return report
    first_row, start = events[0]
    if start.get("chosen_cards") is not None:
        # Dealt from a test's card source: re-derived below from the recorded cards, and
        # never passed as a certified round (its cards do not follow from the seed).
        report.findings.append(
            RoundFinding(
                _step_name(first_row),
                first_row.version,
                "chosen_cards",
                "the round's cards were chosen by a card source (tests only), not dealt "
                "from the seed: not a certified round",
                start["chosen_cards"],
            )
        )
    final = _step_name(events[-1][0])
    report.status = final if final in ("settled", "voided") else "open"
    if report.status == "open":
        return report  # the seed stays sealed until the round ends: nothing to re-derive
    _Rederivation(report, events).run()
    return report


class _Rederivation:
    """Replays the round from its revealed seed alongside the recorded events."""

    def __init__(self, report: RoundReport, events: list[tuple[Row, dict[str, Any]]]) -> None:
        self.report = report
        self.events = events

    def find(
        self, row: Row, name: str, message: str, recorded: Any = None, derived: Any = None
    ) -> None:
        self.report.findings.append(
            RoundFinding(_step_name(row), row.version, name, message, recorded, derived)
        )

    def differs(self, row: Row, doc: dict[str, Any], name: str, derived: Any) -> bool:
        recorded = doc.get(name)
        if recorded == derived:
            return False
        self.find(
            row,
            name,
            f"recorded {json.dumps(recorded, default=str)} but the seed gives "
            f"{json.dumps(derived, default=str)}",
            recorded,
            derived,
        )
        return True

    def run(self) -> None:
        first_row, start = self.events[0]
        last_row, last = self.events[-1]
        if _step_name(first_row) != "started":
            self.find(first_row, "step", "the round's first event is not its start")
            return
        seed_hex = last.get("seed")
        try:
            seed = bytes.fromhex(seed_hex) if isinstance(seed_hex, str) else b""
        except ValueError:
            seed = b""
        if not seed:
            self.find(last_row, "seed", "the final event does not reveal the seed")
            return
        if hashlib.sha256(seed).hexdigest() != start.get("commitment"):
            self.find(
                last_row,
                "seed",
                "revealed seed does not match the commitment SHA-256(seed) of the start",
                seed_hex,
                start.get("commitment"),
            )
        deal: Deal = seed
        chosen = start.get("chosen_cards")
        if chosen is not None:
            try:
                deal = ChosenCards.from_wire(seed, chosen)
            except ChosenCardsError as e:
                self.find(first_row, "chosen_cards", f"unreadable chosen cards: {e}", chosen)
                return
        adapter = adapters().get(str(start.get("game")))
        if adapter is None:
            self.find(first_row, "game", f"unknown game {start.get('game')!r}: cannot re-derive")
            return
        recorded_params = start.get("params")
        if not isinstance(recorded_params, dict):
            self.find(first_row, "params", "no round parameters recorded")
            return
        try:
            params = adapter.read_params(recorded_params)
            terms = adapter.terms(params)
            variant, rules_version, paytable_id = (
                terms.variant,
                terms.rules_version,
                terms.paytable_id,
            )
            stake = adapter.stake_of(params)
            state = adapter.replay(params, [], deal)
        except Exception as e:  # an engine refusal of the recorded parameters is a finding
            self.find(first_row, "params", f"the engine refuses the recorded parameters: {e}")
            return
        self.report.rederived = True
        self.differs(first_row, start, "variant", variant)
        self.differs(first_row, start, "rules_version", rules_version)
        self.differs(first_row, start, "paytable_id", paytable_id)
        self.differs(first_row, start, "stake", stake)
        self.differs(first_row, start, "view", adapter.view(state))
        payout_recorded = 0
        for row, doc in self.events[1:]:
            step = _step_name(row)
            if step == "acted":
                next_state = self._acted(adapter, params, state, deal, row, doc)
                if next_state is None:
                    return
                state = next_state
            elif step == "settled":
                payout_recorded = int(doc.get("payout") or 0)
                self._settled(adapter, state, row, doc)
            elif step == "voided":
                self.differs(row, doc, "refunded", adapter.staked(state))
                self.differs(row, doc, "reversed_win", payout_recorded)
            else:
                self.find(row, "step", f"unexpected event {row.topic!r} in a round")

    def _acted(
        self,
        adapter: GameAdapter[Any, Any, Any],
        params: Any,
        state: Any,
        seed: Deal,
        row: Row,
        doc: dict[str, Any],
    ) -> Any:
        decision = doc.get("decision")
        if adapter.settled(state):
            self.find(row, "decision", "a decision after the round had already settled")
            return None
        default = adapter.write_decision(adapter.default_decision(state))
        if doc.get("automatic") and decision != default:
            self.find(
                row,
                "decision",
                f"recorded as automatic, but {decision!r} is not the default action {default!r}",
                decision,
                default,
            )
        try:
            new_state = adapter.apply(
                params, state, adapter.read_decision(list(decision or [])), seed
            )
        except Exception as e:  # an engine refusal of a recorded decision is a finding
            self.find(row, "decision", f"the engine refuses the recorded decision: {e}", decision)
            return None
        self.differs(row, doc, "stake_added", adapter.staked(new_state) - adapter.staked(state))
        if self.differs(row, doc, "view", adapter.view(new_state)):
            # Name the likely cause too: the cards shown follow from the seed and the decision.
            self.report.findings[-1] = RoundFinding(
                "acted",
                row.version,
                "view",
                f"the view recorded does not follow from the decision {decision!r} "
                f"and the seed (decision or view altered); "
                f"recorded {json.dumps(doc.get('view'))}, "
                f"derived {json.dumps(adapter.view(new_state))}",
                doc.get("view"),
                adapter.view(new_state),
            )
        return new_state

    def _settled(
        self, adapter: GameAdapter[Any, Any, Any], state: Any, row: Row, doc: dict[str, Any]
    ) -> None:
        if not adapter.settled(state):
            self.find(row, "step", "recorded as settled but the engine says the round is open")
            return
        self.differs(row, doc, "payout", adapter.payout(state))
        self.differs(row, doc, "outcome", adapter.outcome(state))
        self.differs(row, doc, "staked", adapter.staked(state))
        self.differs(row, doc, "view", adapter.view(state))
