"""``audit-cli rtp``: observed return-to-player from the raw log against the certified maths.

Reads round events straight from the rows (no application): ``started`` (game, variant,
paytable id, stake, params, the cards shown), ``acted`` (decisions, stake added),
``settled`` (payout, total staked) and ``voided``. Voided rounds are excluded (and
counted), as are rounds still open; a round dealt from chosen cards (tests only) is left
out and reported as a problem. Rounds are grouped by game, variant, paytable and,
for video poker, coins per line (the coin column of the paytable).

Per group the observed RTP is ``sum(paid) / sum(staked)`` (Red Dog also
``1 + sum(net) / sum(original bets)``, seed 003's measure), with a 99 % interval from the
normal approximation. The theory it is compared with is that of the way the group was
played, read from the recorded decisions: every round consistent with the optimal play
(video poker: a max-EV hold; Red Dog: raise the full bet on spreads 7..11, else see),
else every round with the alternative (seed 000's "winning cards" proposal; never
raising), else ``mixed`` and no verdict. With a known play and no double-up the interval
uses the exact per-round variance of :mod:`games.rtp` (multi-line rounds included); with
double-up, which is a fair bet (a higher or lower card is equally likely) and so leaves
the mean unchanged, or with mixed play, it uses the sample variance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from audit_cli.rows import read_rows
from audit_cli.table_rtp import BetRow, TableRtp
from games import audit, registry
from games.audit import RtpRules, TheoryRow
from games.percent import as_percent
from games.rtp import (
    PER_BET,
    PER_STAKED,
    Interval,
    Measure,
    Reference,
    Tally,
    z_score,
)
from ledger import contracts, envelope

LEVEL = 0.99
STARTED, ACTED = contracts.ROUND_STARTED, contracts.ROUND_ACTED
SETTLED, VOIDED = contracts.ROUND_SETTLED, contracts.ROUND_VOIDED
RED_DOG, VIDEO_POKER = "red-dog", "video-poker"
MIXED = "mixed"
_DOUBLE_UP = frozenset({"double", "half-double", "pick"})

THEORY_NOTES = (
    "RTP: expected payout per unit bet.",
    'Published: seed 000 "99,54 (da 1 a 4 fiche); 98,37 (5 fiche)"; seed 003 "96,84%";'
    " seed 002 (Infinite Blackjack) as in its rows; seed 004 publishes none.",
    "Max paid: returned per unit bet, stake included. Hit freq.: share of hands that pay"
    " (Red Dog: of rounds that win more than the stake; - where it has no single meaning).",
)
"""The table's general notes; each game's own come from its registry entry."""
# Kept for readers of the old names: the rows and their helpers moved to the games.
MATCHES, SWAPPED = audit.MATCHES, audit.SWAPPED


# -- reading the log -------------------------------------------------------------------


@dataclass
class _Round:
    start: dict[str, Any]
    decisions: list[list[Any]] = field(default_factory=list)
    settled: dict[str, Any] | None = None
    order: int = 0
    voided: bool = False


GroupKey = tuple[str, str, str, int | None]
"""(game, variant, paytable id, coins per line or None)."""


@dataclass
class Group:
    """One game / variant / paytable / coin column: its tally and how it was played."""

    key: GroupKey
    tally: Tally = field(default_factory=Tally)
    voided: int = 0
    open: int = 0
    double_up_rounds: int = 0
    optimal: bool = True
    """Every round so far is consistent with the optimal play."""
    alternative: bool = True
    """... with the alternative play (winning cards; never raise)."""
    series: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    """Per settled round, in log order: (paid, staked, bet, lines, bet + paid - staked)."""

    @property
    def game(self) -> str:
        return self.key[0]

    @property
    def label(self) -> str:
        game, variant, paytable_id, coins = self.key
        return f"{game}/{variant}/{paytable_id}" + (f"/{coins} coins" if coins else "")

    @property
    def play(self) -> str:
        """``optimal``, the alternative (``winning-cards`` / ``never``) or ``mixed``."""
        rules = _rules(self.game)
        if self.optimal:
            return "optimal"
        return rules.alternative if self.alternative and rules is not None else MIXED

    @property
    def measures(self) -> tuple[Measure, ...]:
        rules = _rules(self.game)
        return (PER_STAKED,) if rules is None else rules.measures


def _payload(state: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(state).payload)
    return doc


def _rounds(db: str) -> Iterator[_Round]:
    """Every round of the log, settled ones in the order they settled, then the rest."""
    rounds: dict[str, _Round] = {}
    for row in read_rows(db, skip_malformed=True):
        if not row.topic.startswith(contracts.ROUND_PREFIX):
            continue
        doc = _payload(row.state)
        if row.topic == STARTED:
            rounds[row.originator_id] = _Round(doc)
            continue
        rnd = rounds.get(row.originator_id)
        if rnd is None:
            continue  # an event without its start: `audit-cli verify` reports the log
        if row.topic == ACTED:
            rnd.decisions.append(list(doc.get("decision") or []))
        elif row.topic == SETTLED:
            rnd.settled, rnd.order = doc, row.notification_id
        elif row.topic == VOIDED:
            rnd.voided = True
    yield from sorted(rounds.values(), key=lambda r: (r.settled is None, r.order))


def _key(start: dict[str, Any]) -> GroupKey:
    rules = _rules(str(start.get("game")))
    coins = None if rules is None else rules.coins(start)
    return (str(start.get("game")), str(start.get("variant")), str(start.get("paytable_id")), coins)


def read_groups(db: str, series: bool = False) -> tuple[list[Group], list[str]]:
    """The groups of the log and any problem found reading it (unknown variant...)."""
    groups: dict[GroupKey, Group] = {}
    problems: list[str] = []
    for rnd in _rounds(db):
        key = _key(rnd.start)
        group = groups.setdefault(key, Group(key))
        if rnd.voided:
            group.voided += 1
            continue
        if rnd.settled is None:
            group.open += 1
            continue
        if rnd.start.get("chosen_cards") is not None:
            # Dealt from a test's card source: its return says nothing about the RNG.
            problems.append(
                f"round {rnd.start.get('code')}: cards chosen by a card source (tests only), "
                "not dealt from the seed: left out of the tally"
            )
            continue
        try:
            _add(group, rnd, series)
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"round {rnd.start.get('code')}: cannot be read: {e!r}")
    return list(groups.values()), problems


def _add(group: Group, rnd: _Round, series: bool) -> None:
    settled = rnd.settled
    assert settled is not None
    rules = _rules(group.game)
    if rules is None:
        return  # reported by known_game
    paid, staked = int(settled["payout"]), int(settled["staked"])
    played = rules.read(rnd.start, settled, rnd.decisions)
    if played.double_up:
        group.double_up_rounds += 1
    group.tally.add(played.bet, staked, paid, played.lines, played.hands)
    group.optimal &= played.optimal
    group.alternative &= played.alternative
    if series:
        group.series.append((paid, staked, played.bet, played.lines, played.bet + paid - staked))


def _rules(game: str) -> RtpRules | None:
    """The game's RTP rules from the registry (the one list of games)."""
    entry = registry.entry(game)
    return None if entry is None else entry.rtp


# -- comparing -------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasureReport:
    measure: Measure
    interval: Interval
    theoretical: Fraction | None
    """The RTP of the play observed (None for mixed play or an unknown paytable)."""
    certified: Fraction | None
    """The certified figure: optimal play."""

    @property
    def inside(self) -> bool | None:
        if self.theoretical is None or not self.interval.known:
            return None
        return self.interval.contains(self.theoretical)

    def to_dict(self) -> dict[str, Any]:
        i = self.interval
        return {
            "measure": self.measure,
            "observed": float(i.observed),
            "ci": [i.low, i.high] if i.known else None,  # None: too few rounds to say
            "level": i.level,
            "variance": i.basis,
            "theoretical": None if self.theoretical is None else float(self.theoretical),
            "certified_optimal": None if self.certified is None else float(self.certified),
            "inside": self.inside,
        }


def references(group: Group, play: str) -> dict[Measure, Reference] | None:
    """The exact figures of ``play`` for ``group``, or None if the maths do not apply."""
    rules = _rules(group.game)
    if play == MIXED or rules is None:
        return None
    return rules.references(group.key, play)


def group_measures(group: Group, level: float = LEVEL) -> list[MeasureReport]:
    certified = references(group, "optimal")
    ref = references(group, group.play)
    exact = ref is not None and group.double_up_rounds == 0
    out = []
    for m in group.measures:
        interval = group.tally.interval(m, level, ref[m] if exact and ref else None)
        out.append(
            MeasureReport(
                m,
                interval,
                None if ref is None else ref[m].rtp,
                None if certified is None else certified[m].rtp,
            )
        )
    return out


def known_game(group: Group) -> str | None:
    """Why the maths cannot judge this group, or None if they can."""
    rules = _rules(group.game)
    if rules is None:
        return f"unknown game {group.game!r}"
    return rules.unknown(group.key)


@dataclass(frozen=True)
class GroupReport:
    group: Group
    measures: list[MeasureReport]

    def to_dict(self) -> dict[str, Any]:
        g, t = self.group, self.group.tally
        game, variant, paytable_id, coins = g.key
        return {
            "game": game,
            "variant": variant,
            "paytable_id": paytable_id,
            "coins": coins,
            "rounds": t.rounds,
            "voided": g.voided,
            "open": g.open,
            "staked": t.staked,
            "paid": t.paid,
            "bet": t.bet,
            "play": g.play if t.rounds else None,
            "double_up_rounds": g.double_up_rounds,
            "measures": [m.to_dict() for m in self.measures],
        }


@dataclass(frozen=True)
class RtpReport:
    db: str
    level: float
    groups: list[GroupReport]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def rounds(self) -> int:
        return sum(g.group.tally.rounds for g in self.groups)

    @property
    def voided(self) -> int:
        return sum(g.group.voided for g in self.groups)

    @property
    def open(self) -> int:
        return sum(g.group.open for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "db": self.db,
            "level": self.level,
            "rounds": self.rounds,
            "voided": self.voided,
            "open": self.open,
            "groups": [g.to_dict() for g in self.groups],
            "problems": self.problems,
        }


def rtp_report(db: str, level: float = LEVEL, series: bool = False) -> RtpReport:
    """Every group's observed RTP against its theory; ``problems`` lists the findings."""
    groups, problems = read_groups(db, series)
    out = []
    for g in sorted(groups, key=lambda g: (g.key[0], g.key[1], g.key[2], g.key[3] or 0)):
        unknown = known_game(g)
        if unknown:
            problems.append(unknown)
        measures = group_measures(g, level) if g.tally.rounds and not unknown else []
        for m in measures:
            if m.inside is False:
                problems.append(
                    f"{g.label} {m.measure}: theoretical {_pct(m.theoretical)} lies outside "
                    f"the {level:.0%} interval [{_pct(m.interval.low)}, {_pct(m.interval.high)}]"
                )
        out.append(GroupReport(g, measures))
    return RtpReport(db, level, out, problems)


def _pct(value: Fraction | float | None, places: int = 4) -> str:
    if value is None:
        return "-"
    return f"{as_percent(value, places)} %"


# -- the certified table ---------------------------------------------------------------


def theoretical_rows() -> list[TheoryRow]:
    """The certified-RTP table: every game's rows, as its registry entry supplies them
    (played games first, then those certified before they are on the ledger)."""
    return [row for table in registry.certified_tables().values() for row in table.rows()]


def theory_notes() -> list[str]:
    notes = [n for table in registry.certified_tables().values() for n in table.notes]
    return [*THEORY_NOTES[:1], *notes, *THEORY_NOTES[1:]]


def known_difference(row: TheoryRow) -> str | None:
    """Why ``row`` differs from its published figure, if its game's entry says so."""
    table = registry.certified_tables().get(row.game)
    return None if table is None else table.explained(row)


def theory_findings(rows: list[TheoryRow]) -> list[str]:
    """Rows that differ from their published figure with no explanation from their game."""
    return [
        f"{r.game}/{r.variant}/{r.paytable_id} {r.play}: {r.agreement} (published {r.published} %)"
        for r in rows
        if r.agreement.startswith("DIFFERS") and known_difference(r) is None
    ]


# -- plotting --------------------------------------------------------------------------


def plot(report: RtpReport, path: Path, tables: TableRtp | None = None) -> int:
    """Cumulative observed RTP of each group over its rounds (log order), with the
    theoretical line and its band (exact variance, when the play is known), and one panel
    for the live blackjack tables (each bet type against its certified figure). Needs the
    report read with ``series=True``. Returns the number of panels drawn."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    groups = [g.group for g in report.groups if g.group.series]
    bets = [r for r in (tables.rows if tables else []) if r.per_round]
    panels = len(groups) + (1 if bets else 0)
    if not panels:
        raise ValueError("no settled rounds to plot")
    fig, axes = plt.subplots(panels, 1, figsize=(9, 3.2 * panels), squeeze=False)
    if bets:
        _plot_tables(axes[-1, 0], bets, np)
    z = z_score(report.level)
    for ax, g in zip(axes[:, 0], groups, strict=False):
        paid, staked, bet, lines, per_bet = np.array(g.series, dtype=np.float64).T
        measure: Measure = PER_BET if g.game == RED_DOG else PER_STAKED
        num, den = (per_bet, bet) if measure == PER_BET else (paid, staked)
        n = np.arange(1, len(paid) + 1)
        observed = np.cumsum(num) / np.cumsum(den)
        marker = "o" if len(n) < 30 else None  # one round is a point, which a line hides
        ax.plot(n, observed, lw=1, marker=marker, ms=3, label=f"observed ({measure})")
        ref = references(g, g.play)
        certified = references(g, "optimal")
        if ref is None and certified is not None:
            value = float(certified[measure].rtp)
            ax.axhline(value, color="k", lw=1, ls="--", label=f"certified {value:.4%} (optimal)")
        if ref is not None:
            theory = float(ref[measure].rtp)
            var = np.array([float(ref[measure].round_variance(int(k))) for k in lines])
            band = z * np.sqrt(np.cumsum(bet * bet * var)) / np.cumsum(den)
            ax.axhline(theory, color="k", lw=1, label=f"theoretical {theory:.4%} ({g.play})")
            ax.fill_between(
                n, theory - band, theory + band, alpha=0.25, label=f"{report.level:.0%} band"
            )
            # Frame the band from the 30th round on: the first rounds swing by 100s of %.
            w = 1.5 * band[min(len(band) - 1, 29)]
            ax.set_ylim(min(theory - w, observed[-1]), max(theory + w, observed[-1]))
        ax.set_title(g.label, fontsize=10)
        ax.set_xlabel("rounds")
        ax.set_ylabel("cumulative RTP")
        ax.set_xscale("log")
        ax.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return panels


def _plot_tables(ax: Any, bets: list[BetRow], np: Any) -> None:
    """Infinite Blackjack at the live tables: each bet type's cumulative observed RTP over
    its rounds, and its certified figure (dashed, same colour)."""
    for row in bets:
        value, base = np.array(list(row.per_round.values()), dtype=np.float64).T
        n = np.arange(1, len(value) + 1)
        # A marker on each of the first rounds: one round is a point, which a bare line hides.
        marker = "o" if len(n) < 30 else None
        line = ax.plot(
            n, np.cumsum(value) / np.cumsum(base), lw=1, marker=marker, ms=3, label=row.bet
        )[0]
        certified = next(iter(row.certified().items()), None)
        if certified is not None:
            play, rtp = certified
            ax.axhline(
                float(rtp),
                color=line.get_color(),
                lw=1,
                ls="--",
                label=f"{row.bet} certified {float(rtp):.2%} ({play})",
            )
    ax.set_title("blackjack infinite (live tables): observed per bet type", fontsize=10)
    ax.set_xlabel("rounds")
    ax.set_ylabel("cumulative RTP")
    ax.set_xscale("log")
    ax.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
    ax.legend(fontsize=7, loc="upper right")
