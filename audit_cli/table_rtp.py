"""``audit-cli rtp`` for the live blackjack tables: observed RTP per bet type, from raw rows.

Every settled seat of every table round (``croupier/blackjack/seat/settled``; a voided
round or seat is left out and counted) contributes to the rows of its round's
configuration (the paytable ids and the ten-up reading the round opened with):

- ``main``: the hands that were played out. RTP per unit of *original* bet, as the
  certified figure is defined: ``1 + (returned - staked) / original``, where ``staked``
  includes doubles and splits.
- ``cash-out``: the hands cashed out: the amount paid per unit of the main bet.
- ``insurance``: per unit insured (the seat's staked total minus its hands and sides).
- each side bet (``perfect-pairs``, ``21+3``, ``hot-3``, ``bust-it``): paid per unit staked.

Beside each, the certified figure of ``games/blackjack/certified.py`` for that bet and
paytable (main: the optimal play and basic strategy; cash-out: always cashing out at the
first opportunity, the reference for a player who takes every offer). The interval is
the normal approximation of the ratio over *rounds* (every seat of a round shares its
cards, so a round is one sample), with the sample variance: it is informational and never
a finding (a few hundred rounds understate the rare large payouts of the side bets, and
the main game's return depends on how the players played, which the certified figure
fixes to the optimal play).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from audit_cli.rows import read_rows
from games.blackjack.certified import certified_rows
from games.rtp import z_score
from ledger import contracts, envelope
from ledger.tables import account_rows

LEVEL = 0.99
SIDES = ("perfect-pairs", "21+3", "hot-3", "bust-it")
ORDER = ("main", "cash-out", "insurance", *SIDES)


@dataclass
class BetRow:
    """One bet type under one paytable: totals and per-round sums for the interval."""

    bet: str
    paytable_id: str
    staked: int = 0
    returned: int = 0
    base: int = 0
    """The RTP's denominator: the original bets (main), else ``staked``."""
    value: int = 0
    """The RTP's numerator: ``base + returned - staked`` (main), else ``returned``."""
    hands: int = 0
    per_round: dict[str, list[int]] = field(default_factory=dict)

    def add(self, code: str, staked: int, returned: int, base: int, value: int) -> None:
        self.staked += staked
        self.returned += returned
        self.base += base
        self.value += value
        self.hands += 1
        acc = self.per_round.setdefault(code, [0, 0])
        acc[0] += value
        acc[1] += base

    @property
    def observed(self) -> float | None:
        return None if self.base == 0 else self.value / self.base

    def interval(self, level: float = LEVEL) -> tuple[float, float] | None:
        r, n = self.observed, len(self.per_round)
        if r is None or n < 2:
            return None
        spread = sum((v - r * b) ** 2 for v, b in self.per_round.values()) * n / (n - 1)
        half = z_score(level) * math.sqrt(spread) / self.base
        return r - half, r + half

    def certified(self) -> dict[str, Fraction]:
        return certified_for(self.bet, self.paytable_id)

    def to_dict(self, level: float = LEVEL) -> dict[str, Any]:
        ci = self.interval(level)
        certified = self.certified()
        first = next(iter(certified.values()), None)
        return {
            "bet": self.bet,
            "paytable_id": self.paytable_id,
            "rounds": len(self.per_round),
            "hands": self.hands,
            "staked": self.staked,
            "returned": self.returned,
            "observed": self.observed,
            "ci": None if ci is None else list(ci),
            "level": level,
            "certified": {play: float(v) for play, v in certified.items()},
            "inside": None if ci is None or first is None else ci[0] <= first <= ci[1],
        }


def certified_for(bet: str, paytable_id: str) -> dict[str, Fraction]:
    """The certified figures for a bet type and paytable id, by play (may be empty)."""
    out: dict[str, Fraction] = {}
    for r in certified_rows():
        if bet == "main":
            hit = r.paytable_id == paytable_id and r.play in ("optimal", "basic strategy")
        elif bet == "cash-out":
            hit = r.paytable_id == paytable_id and r.play.startswith("always")
        elif bet == "insurance":
            hit = r.paytable_id.startswith("insurance")
        else:
            hit = r.paytable_id == paytable_id and r.play == f"side bet {bet}"
        if hit:
            out[r.play] = r.rtp
    return out


@dataclass
class TableRtp:
    rows: list[BetRow]
    seats: int
    voided_seats: int
    open_seats: int
    level: float = LEVEL

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": account_rows.GAME,
            "variant": account_rows.VARIANT,
            "seats": self.seats,
            "voided_seats": self.voided_seats,
            "open_seats": self.open_seats,
            "rows": [r.to_dict(self.level) for r in self.rows],
        }


def _doc(state: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(state).payload)
    return doc


def table_rtp(db: str, level: float = LEVEL) -> TableRtp:
    configs: dict[str, dict[str, Any]] = {}
    voided_rounds: set[str] = set()
    seat_round: dict[str, str] = {}
    settled: dict[str, dict[str, Any]] = {}
    voided: set[str] = set()
    bets = account_rows.SeatRows()
    for row in read_rows(db, skip_malformed=True):
        topic = row.topic
        if not topic.startswith(("croupier/blackjack/round/", account_rows.SEAT_PREFIX)):
            continue
        doc = _doc(row.state)
        oid = row.originator_id
        if account_rows.wanted(topic):
            bets.apply(topic, oid, doc, set())
        if topic == contracts.TABLE_ROUND_OPENED:
            configs[oid] = {"code": doc["code"], **doc["config"]}
        elif topic == contracts.TABLE_ROUND_VOIDED:
            voided_rounds.add(oid)
        elif topic == contracts.SEAT_OPENED:
            seat_round[oid] = str(doc["round_id"])
        elif topic == contracts.SEAT_SETTLED:
            settled[oid] = doc["result"]
        elif topic == contracts.SEAT_VOIDED:
            voided.add(oid)
    rows: dict[tuple[str, str], BetRow] = {}

    def row_of(bet: str, paytable_id: str) -> BetRow:
        return rows.setdefault((bet, paytable_id), BetRow(bet, paytable_id))

    counted = 0
    for seat, result in settled.items():
        rid = seat_round.get(seat, "")
        if seat in voided or rid in voided_rounds or rid not in configs:
            continue
        counted += 1
        config = configs[rid]
        code = str(config["code"])
        record = bets.row(seat)
        original = int((record or {}).get("bets", {}).get("main", 0))
        hands = [(str(o), int(s), int(p)) for o, s, p in result["hands"]]
        sides = [(str(b), int(s), int(p)) for b, s, _, p in result["sides"]]
        cashed = [h for h in hands if h[0] == "cash-out"]
        if cashed:
            staked = sum(s for _, s, _ in cashed)
            paid = sum(p for _, _, p in cashed)
            row_of("cash-out", str(config["cashout_table_id"])).add(
                code, staked, paid, staked, paid
            )
        else:
            staked = sum(s for _, s, _ in hands)
            paid = sum(p for _, _, p in hands)
            main = row_of("main", f"main, ten-up {config['ten_up']}")
            main.add(code, staked, paid, original, original + paid - staked)
        insured = int(result["staked"]) - sum(s for _, s, _ in hands) - sum(s for _, s, _ in sides)
        if insured > 0:
            paid = int(result["insurance"])
            row_of("insurance", "insurance-2:1").add(code, insured, paid, insured, paid)
        for bet, stake, payout in sides:
            row_of(bet, str(config["paytables"][bet])).add(code, stake, payout, stake, payout)
    ordered = sorted(rows.values(), key=lambda r: (ORDER.index(r.bet), r.paytable_id))
    open_seats = len(seat_round) - len(settled) - len(voided - set(settled))
    return TableRtp(ordered, counted, len(voided), max(open_seats, 0), level)


def _pct(value: float | Fraction | None, places: int = 4) -> str:
    return "-" if value is None else f"{float(value) * 100:.{places}f} %"


def print_table_rtp(report: TableRtp, out: Any) -> None:
    """The live tables' rows, in the layout of the other games' (``audit-cli rtp``)."""
    from rich.console import Console

    from audit_cli.output import FoldingTable

    table = FoldingTable(
        title=f"audit-cli rtp: live blackjack tables per bet type ({report.level:.0%} interval)"
    )
    for col in ("bet", "paytable", "rounds", "hands"):
        table.add_column(col, no_wrap=True)
    for col in ("staked", "returned"):
        table.add_column(col, justify="right", no_wrap=True)
    for col in ("observed", "interval (sample)", "certified", "inside"):
        table.add_column(col, no_wrap=True)
    for r in report.rows:
        ci = r.interval(report.level)
        certified = r.certified()
        inside = r.to_dict(report.level)["inside"]
        table.add_row(
            r.bet,
            r.paytable_id,
            str(len(r.per_round)),
            str(r.hands),
            str(r.staked),
            str(r.returned),
            _pct(r.observed),
            "-" if ci is None else f"[{_pct(ci[0], 2)}, {_pct(ci[1], 2)}]",
            "\n".join(f"{_pct(v)} ({play})" for play, v in certified.items()) or "-",
            {True: "yes", False: "no", None: "n/a"}[inside],
        )
    Console(file=out.file, width=max(out.width, 160)).print(table)
    out.print(
        f"{report.seats} settled seats; {report.voided_seats} voided and {report.open_seats} "
        "open seats excluded. main: per unit of original bet (doubles and splits in the "
        "stakes); cash-out: paid per unit of the hands cashed out; insurance: per unit "
        "insured; side bets: per unit staked. The interval is over rounds (a round's seats "
        "share its cards) with the sample variance: informational, never a finding.",
        markup=False,
    )
