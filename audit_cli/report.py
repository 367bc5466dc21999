"""``audit-cli report``: the regulator's report, computed from the raw log alone.

Per day (UTC, and the operator's time zone), game, variant and currency: rounds settled,
rounds voided, stakes, wins, refunds, wins reversed, gross gaming revenue, the observed
RTP of the rounds settled that day with its confidence interval, and the certified RTP
of the way they were bet (stake-weighted over paytables and bet types). Per game session
(ADM-style): player, currency, opened and closed, buy-in, final balance, rounds, stakes
and wins. Totals per currency.

What counts, and when:

- **Money** is every movement into or out of the house's ledger (``house:CUR``), which is
  what ``audit-cli verify --balances`` adds up: a stake (``session/stake-debited``), a win
  (``session/win-credited``), a refund of a voided or cancelled bet
  (``session/refunded``), a win reversed by a void (``session/win-reversed``). Each is
  dated by the event that moved it (cash basis: a round open over midnight has its stake
  on one day and its win on the next) and attributed to its round by the game code it
  names; seamless rounds move between the operator's wallet ledger and the house, and
  count alike. GGR = stakes - wins - refunds + wins reversed: the day's change of the
  house's balance, so the totals equal the books to the minor unit.
- **Rounds** are counted on the day they ended: settled (a live-table seat is one round
  of that player) or voided. Voided rounds are left out of the RTP (their stakes come
  back as refunds); rounds still open at the end of the log are counted in
  ``open_rounds`` of the totals.
- **Observed RTP** is ``sum(paid) / sum(staked)`` over the rounds settled that day, with
  a ``level`` (99 %) interval from the ratio estimator's standard error over those rounds
  (normal approximation; none under two rounds).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from audit_cli import rtp
from audit_cli.rows import read_rows
from audit_cli.table_rtp import certified_for
from games.rtp import PER_STAKED, z_score
from ledger import contracts, envelope
from ledger.tables import account_rows

LEVEL = 0.99
UTC_ZONE = "UTC"
BLACKJACK = (account_rows.GAME, account_rows.VARIANT)
MONEY_KINDS = {
    contracts.SESSION_STAKE_DEBITED: "stakes",
    contracts.SESSION_WIN_CREDITED: "wins",
    contracts.SESSION_ROUND_SETTLED: "wins",
    contracts.SESSION_REFUNDED: "refunds",
    contracts.SESSION_WIN_REVERSED: "reversed",
}


@dataclass(kw_only=True)
class Money:
    """The house's movements of one row, by kind (minor units), and the GGR they make."""

    stakes: int = 0
    wins: int = 0
    refunds: int = 0
    reversed: int = 0

    @property
    def ggr(self) -> int:
        return self.stakes - self.wins - self.refunds + self.reversed

    def add(self, kind: str, amount: int) -> None:
        setattr(self, kind, getattr(self, kind) + amount)

    def to_dict(self) -> dict[str, Any]:
        doc = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        doc["ggr"] = self.ggr
        return doc


@dataclass
class DayRow(Money):
    day: str
    zone: str
    game: str
    variant: str
    currency: str
    rounds: int = 0
    voided: int = 0
    rtp_observed: float | None = None
    rtp_low: float | None = None
    rtp_high: float | None = None
    rtp_certified: float | None = None
    _returns: list[tuple[int, int, Fraction | None]] = field(default_factory=list, repr=False)


@dataclass
class SessionRow(Money):
    session_id: str
    player_id: str
    currency: str
    opened_at: str
    buy_in: int
    closed_at: str | None = None
    final_balance: int | None = None
    rounds: int = 0
    seamless: bool = False


@dataclass
class Totals(Money):
    currency: str
    rounds: int = 0
    voided: int = 0
    open_rounds: int = 0


@dataclass(frozen=True)
class Report:
    zone: str
    level: float
    days: list[DayRow]
    """By UTC day, then (when ``zone`` is not UTC) by the operator's day."""
    sessions: list[SessionRow]
    totals: list[Totals]
    findings: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "level": self.level,
            "days": [d.to_dict() for d in self.days],
            "sessions": [s.to_dict() for s in self.sessions],
            "totals": [t.to_dict() for t in self.totals],
            "findings": self.findings,
        }


@dataclass
class _Round:
    game: str
    variant: str
    currency: str
    session: str
    certified: Fraction | None = None
    ended: datetime | None = None
    staked: int = 0
    paid: int = 0
    voided: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    """A live-table round's configuration (its paytables), for the certified figure."""


def _time(doc: dict[str, Any]) -> datetime:
    stamp = doc.get("timestamp")
    text = stamp.get("_data_") if isinstance(stamp, dict) else stamp
    return datetime.fromisoformat(str(text))


def build_report(db: str, zone: str = UTC_ZONE, level: float = LEVEL) -> Report:
    """The report of the log in ``db`` (see the module docstring); ``zone`` an IANA name."""
    local = ZoneInfo(zone)
    rounds: dict[str, _Round] = {}  # by game code
    by_aggregate: dict[str, str] = {}  # round / seat aggregate id -> game code
    bj_configs: dict[str, dict[str, Any]] = {}  # table round id -> its config
    sessions: dict[str, SessionRow] = {}
    money: list[tuple[datetime, str, str, str, int, str]] = []
    findings: list[str] = []
    certified_cache: dict[Any, Fraction | None] = {}
    for row in read_rows(db, skip_malformed=True):
        topic, oid = row.topic, row.originator_id
        doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
        mv = doc.get("movement")
        if isinstance(mv, dict) and _house(mv) is not None:
            kind = MONEY_KINDS.get(topic)
            if kind is None:
                findings.append(f"row {row.notification_id}: a house movement by {topic}")
                kind = "stakes" if str(mv["destination"]).startswith("house:") else "wins"
            money.append(
                (
                    _time(doc),
                    str(doc.get("game_code")),
                    kind,
                    str(mv["currency"]),
                    int(mv["amount"]),
                    oid,
                )
            )
        if topic == contracts.ROUND_STARTED:
            code = str(doc["code"])
            by_aggregate[oid] = code
            rounds[code] = _Round(
                str(doc["game"]),
                str(doc["variant"]),
                str(doc["currency"]),
                str(doc["session_id"]),
                _certified(doc, certified_cache),
            )
        elif topic == contracts.ROUND_SETTLED and oid in by_aggregate:
            rnd = rounds[by_aggregate[oid]]
            rnd.ended, rnd.staked, rnd.paid = _time(doc), int(doc["staked"]), int(doc["payout"])
        elif topic == contracts.ROUND_VOIDED and oid in by_aggregate:
            rnd = rounds[by_aggregate[oid]]
            rnd.ended, rnd.voided = _time(doc), True
        elif topic == contracts.TABLE_ROUND_OPENED:
            bj_configs[oid] = {"code": doc["code"], "currency": doc["currency"], **doc["config"]}
        elif topic == contracts.SEAT_OPENED:
            code = str(doc["code"])
            by_aggregate[oid] = f"{code}/{doc['session_id']}"
            config = bj_configs.get(str(doc["round_id"]), {})
            currency = str(config.get("currency", "?"))
            rounds[by_aggregate[oid]] = _Round(
                *BLACKJACK, currency, str(doc["session_id"]), config=config
            )
        elif topic == contracts.SEAT_SETTLED and oid in by_aggregate:
            rnd = rounds[by_aggregate[oid]]
            result = doc["result"]
            rnd.ended, rnd.staked, rnd.paid = (
                _time(doc),
                int(result["staked"]),
                int(result["returned"]),
            )
            rnd.certified = _bj_certified(result, rnd.config)
        elif topic == contracts.SEAT_VOIDED and oid in by_aggregate:
            rnd = rounds[by_aggregate[oid]]
            rnd.ended, rnd.voided = _time(doc), True
        elif topic == contracts.SESSION_OPENED:
            sessions[oid] = SessionRow(
                oid,
                str(doc.get("player_id")),
                str(doc.get("currency")),
                _time(doc).isoformat(),
                int(doc.get("buy_in") or 0),
                seamless=doc.get("operator") is not None,
            )
        elif topic == contracts.SESSION_CLOSED and oid in sessions:
            sessions[oid].closed_at = _time(doc).isoformat()
            sessions[oid].final_balance = int(doc["final_balance"])
    return _assemble(rounds, sessions, money, zone, local, level, findings)


def _house(mv: dict[str, Any]) -> str | None:
    for end in (mv.get("source"), mv.get("destination")):
        if isinstance(end, str) and end.startswith("house:"):
            return end
    return None


def _certified(start: dict[str, Any], cache: dict[Any, Fraction | None]) -> Fraction | None:
    """The certified (optimal play) RTP per unit staked of a round's game, variant,
    paytable and coins, from the games' own maths (None where none applies)."""
    key = rtp._key(start)
    if key not in cache:
        rules = rtp._rules(key[0])
        refs = None if rules is None or rules.unknown(key) else rules.references(key, "optimal")
        cache[key] = None if refs is None or PER_STAKED not in refs else refs[PER_STAKED].rtp
    return cache[key]


def _bj_certified(result: dict[str, Any], config: dict[str, Any]) -> Fraction | None:
    """A seat's certified RTP: each bet type's certified figure weighted by its stake."""
    parts: list[tuple[int, Fraction | None]] = []
    for outcome, stake, _paid in result.get("hands", []):
        bet = "cash-out" if outcome == "cash-out" else "main"
        table = config.get("cashout_table_id") if bet == "cash-out" else None
        figures = certified_for(bet, str(table or f"main, ten-up {config.get('ten_up')}"))
        parts.append((int(stake), figures.get("optimal") or next(iter(figures.values()), None)))
    for bet, stake, _, _paid in result.get("sides", []):
        figures = certified_for(str(bet), str(config.get("paytables", {}).get(bet)))
        parts.append((int(stake), next(iter(figures.values()), None)))
    staked = sum(s for s, _ in parts)
    if not staked or any(f is None for _, f in parts):
        return None
    return sum((Fraction(s) * f for s, f in parts if f is not None), Fraction(0)) / staked


def _assemble(
    rounds: dict[str, _Round],
    sessions: dict[str, SessionRow],
    money: list[tuple[datetime, str, str, str, int, str]],
    zone: str,
    local: ZoneInfo,
    level: float,
    findings: list[str],
) -> Report:
    zones = [(UTC_ZONE, ZoneInfo(UTC_ZONE))] + ([(zone, local)] if zone != UTC_ZONE else [])
    days: dict[tuple[str, str, str, str, str], DayRow] = {}
    totals: dict[str, Totals] = {}

    def day_row(z: str, tz: ZoneInfo, when: datetime, game: str, variant: str, cur: str) -> DayRow:
        day = when.astimezone(tz).date().isoformat()
        key = (z, day, game, variant, cur)
        if key not in days:
            days[key] = DayRow(day, z, game, variant, cur)
        return days[key]

    for when, code, kind, currency, amount, session in money:
        rnd = rounds.get(code) or rounds.get(f"{code}/{session}")
        game, variant = (rnd.game, rnd.variant) if rnd else ("?", "?")
        if rnd is None:
            findings.append(f"a house movement names round {code}, which the log does not start")
        for z, tz in zones:
            day_row(z, tz, when, game, variant, currency).add(kind, amount)
        totals.setdefault(currency, Totals(currency)).add(kind, amount)
        if session in sessions:
            sessions[session].add(kind, amount)
    for rnd in rounds.values():
        t = totals.setdefault(rnd.currency, Totals(rnd.currency))
        s = sessions.get(rnd.session)
        if rnd.ended is None:
            t.open_rounds += 1
            continue
        if s is not None:
            s.rounds += 1
        if rnd.voided:
            t.voided += 1
        else:
            t.rounds += 1
        for z, tz in zones:
            row = day_row(z, tz, rnd.ended, rnd.game, rnd.variant, rnd.currency)
            if rnd.voided:
                row.voided += 1
            else:
                row.rounds += 1
                row._returns.append((rnd.staked, rnd.paid, rnd.certified))
    for row in days.values():
        _rtp(row, level)
    ordered = sorted(
        days.values(), key=lambda r: (r.zone != UTC_ZONE, r.day, r.game, r.variant, r.currency)
    )
    return Report(
        zone,
        level,
        ordered,
        sorted(sessions.values(), key=lambda s: (s.opened_at, s.session_id)),
        sorted(totals.values(), key=lambda t: t.currency),
        findings,
    )


def _rtp(row: DayRow, level: float) -> None:
    returns = [(s, p, c) for s, p, c in row._returns if s > 0]
    staked = sum(s for s, _, _ in returns)
    if not staked:
        return
    paid = sum(p for _, p, _ in returns)
    ratio = paid / staked
    row.rtp_observed = ratio
    if all(c is not None for _, _, c in returns):
        row.rtp_certified = float(
            sum(Fraction(s) * c for s, _, c in returns if c is not None) / staked
        )
    n = len(returns)
    if n >= 2:
        mean_stake = staked / n
        residual = sum((p - ratio * s) ** 2 for s, p, _ in returns) / (n - 1)
        half = z_score(level) * math.sqrt(residual / n) / mean_stake
        row.rtp_low, row.rtp_high = ratio - half, ratio + half


def day_columns() -> list[str]:
    return [
        "zone", "day", "game", "variant", "currency", "rounds", "voided", "stakes", "wins",
        "refunds", "reversed", "ggr", "rtp_observed", "rtp_low", "rtp_high", "rtp_certified",
    ]  # fmt: skip


def session_columns() -> list[str]:
    return [
        "session_id", "player_id", "currency", "opened_at", "closed_at", "buy_in",
        "final_balance", "rounds", "stakes", "wins", "refunds", "reversed", "seamless",
    ]  # fmt: skip


def rows_for_csv(items: Iterable[DayRow | SessionRow], columns: list[str]) -> Iterable[list[Any]]:
    for item in items:
        doc = item.to_dict()
        yield ["" if doc.get(c) is None else doc[c] for c in columns]
