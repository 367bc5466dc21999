"""``audit-cli events``: the significant events of the log, from the raw rows.

Two sources, one list in log order: the significant events recorded as such
(:mod:`ledger.significant`: server started and stopped, sealer refusals, the operator's
verification runs, wallet unavailable and available again), and the events of the log
that are significant by their nature: the genesis and each key rotation, a live table
created or configured (its limits), a table round paused, resumed or voided, a round
voided (with its reason and incident: a malfunction is a void's reason).

``--since`` keeps the events at or after an instant (or a day, UTC); ``--kind`` keeps
the kinds named (repeatable).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from audit_cli.rows import read_rows
from audit_cli.statement import in_range
from ledger import contracts, envelope

BY_TOPIC = {
    envelope.GENESIS_TOPIC: "genesis",
    envelope.ROTATED_TOPIC: "key-rotation",
    contracts.TABLE_OPENED: "table-created",
    contracts.TABLE_CONFIGURED: "table-config",
    contracts.TABLE_ROUND_PAUSED: "pause",
    contracts.TABLE_ROUND_RESUMED: "resume",
    contracts.TABLE_ROUND_VOIDED: "void",
    contracts.ROUND_VOIDED: "void",
}
KINDS = sorted({*BY_TOPIC.values(), *(str(k) for k in contracts.SignificantKind)})
_LEFT_OUT = frozenset({"timestamp", "originator_topic", "seed", "view", "proof", "public_key"})


@dataclass(frozen=True)
class SignificantRow:
    notification_id: int
    time: str
    kind: str
    subject: str
    """What it concerns: a table, a round's game code, a key id, a cell or operator."""
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _time(doc: dict[str, Any]) -> str:
    stamp = doc.get("timestamp")
    text = stamp.get("_data_") if isinstance(stamp, dict) else stamp
    return str(text or "")


def significant_events(db: str) -> Iterator[SignificantRow]:
    codes: dict[str, str] = {}  # round aggregate -> game code
    tables: dict[str, str] = {}  # table (round) aggregate -> table id
    for row in read_rows(db, skip_malformed=True):
        topic = row.topic
        wanted = topic in BY_TOPIC or topic == contracts.SIGNIFICANT_RECORDED
        if not wanted and topic not in (contracts.ROUND_STARTED, contracts.TABLE_ROUND_OPENED):
            continue
        doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
        if topic == contracts.ROUND_STARTED:
            codes[row.originator_id] = str(doc.get("code"))
            continue
        if topic == contracts.TABLE_ROUND_OPENED:
            codes[row.originator_id] = str(doc.get("code"))
            tables[row.originator_id] = str(doc.get("table"))
            continue
        if topic == contracts.TABLE_OPENED:
            tables[row.originator_id] = str(doc.get("table"))
        if topic == contracts.SIGNIFICANT_RECORDED:
            kind = str(doc["kind"])
            detail = dict(doc.get("detail") or {})
            time = str(doc.get("at") or _time(doc))
            subject = str(detail.get("cell") or detail.get("operator") or "")
        else:
            kind = BY_TOPIC[topic]
            detail = {k: v for k, v in doc.items() if k not in _LEFT_OUT}
            time = _time(doc)
            subject = codes.get(row.originator_id) or tables.get(row.originator_id) or ""
            if topic == envelope.ROTATED_TOPIC or topic == envelope.GENESIS_TOPIC:
                subject = str(doc.get("kid"))
        yield SignificantRow(row.notification_id, time, kind, subject, detail)


def select(
    rows: Iterator[SignificantRow], since: str | None, kinds: list[str] | None
) -> list[SignificantRow]:
    return [
        r
        for r in rows
        if (not kinds or r.kind in kinds) and (since is None or in_range(r.time, since, None))
    ]
