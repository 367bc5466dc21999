"""``audit-cli round CODE``: a round's timeline re-derived from its revealed seed
(``audit_cli.rounds``), or a live blackjack table round's (``audit_cli.table_round``),
with one player's part of it (``--session``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from audit_cli.commands.common import exit_code, load_keys, print_json
from audit_cli.output import FoldingTable as Table
from audit_cli.round_check import RoundReport
from audit_cli.rounds import check_round
from audit_cli.table_round import TableRoundReport, check_table_round, glyphs, is_table_code
from games.cards import Card
from ledger.contracts import RoundStatus


@dataclass(frozen=True)
class RoundNotFound:
    """No round with this code in this store: not a mismatch (nothing was compared)."""

    db: str
    code: str
    ok: bool = False

    @property
    def message(self) -> str:
        # Which store was read, so a wrong ``--db`` or settings show at once.
        return (
            f"no round with game code {self.code!r} in {self.db}: check the code and the "
            "store (--db, or CROUPIER_DATABASE_URL / CROUPIER_DATA_DIR); `audit-cli verify` "
            "tells whether any stored event was removed"
        )


RoundOutcome = RoundReport | RoundNotFound
"""A round's check (a ``TableRoundReport`` for a live table's), or why there is none."""


def run(db: str, code: str, keys: str | None = None, session: str | None = None) -> RoundOutcome:
    """Check round ``code`` of ``db``; signatures too with the public keys file ``keys``;
    ``session``: one player's part of a live table round."""
    public_keys = load_keys(db, keys) if keys else None
    report: RoundReport
    if is_table_code(code):  # a live blackjack table round (ledger/tables)
        report = check_table_round(db, code, public_keys, session)
    else:
        report = check_round(db, code, public_keys)
    if report.status == "missing":
        return RoundNotFound(db, code)
    return report


def render(report: RoundOutcome, out: Console, *, as_json: bool) -> int:
    if isinstance(report, RoundNotFound):
        if as_json:
            doc = {"ok": False, "status": "not-found", "code": report.code}
            print(json.dumps({**doc, "error": report.message}))
        else:
            Console(stderr=True).print(
                f"[red]NOT FOUND[/red]: {escape(report.message)}", highlight=False
            )
    elif as_json:
        print_json(out, report.to_dict(), default=str)
    elif isinstance(report, TableRoundReport):
        _print_table_round(report, out)
    else:
        _print_round(report, out)
    return exit_code(report)


def _cards(cards: list[str]) -> str:
    return " ".join(Card.parse(c).glyph for c in cards)


_DETAILS = (
    "decision",
    "automatic",
    "stake",
    "stake_added",
    "payout",
    "outcome",
    "reason",
    "incident_id",
    "refunded",
    "reversed_win",
)


def _print_round(report: RoundReport, out: Console) -> None:
    table = Table(title=f"round {report.code} ({report.status})")
    for col in ("#", "time", "step", "cards", "details"):
        table.add_column(col)
    for s in report.steps:
        view = s.get("view") or {}
        cards = view.get("cards") or view.get("dealt") or []
        details = {k: v for k, v in s.items() if k in _DETAILS}
        table.add_row(
            str(s["version"]),
            str(s.get("time", "")),
            s["step"],
            _cards(cards),
            json.dumps(details, default=str),
        )
    out.print(table)
    _print_video_poker(report.steps, out)
    if not report.signatures_checked:
        out.print(
            "[yellow]note[/yellow]: signatures and chain links not checked "
            "(no public keys: pass --keys FILE from `audit-cli keys`)."
        )
    if not report.ok:
        for f in report.findings:
            out.print(f"[red]MISMATCH[/red] {escape(f.text())}", highlight=False)
    elif report.status in (RoundStatus.SETTLED, RoundStatus.VOIDED):
        out.print(
            "[green]OK[/green]: every event"
            + (" is signed and chained, and its" if report.signatures_checked else "'s")
            + " views, decisions, cards and amounts re-derive from the revealed seed."
        )
    else:
        out.print("[yellow]open[/yellow]: the seed is revealed when the round ends.")


def _print_video_poker(steps: list[dict[str, Any]], out: Console) -> None:
    final = (steps[-1].get("view") or {}) if steps else {}
    if final.get("lines"):
        lines = Table(title="lines (each drew from its own deck)")
        for col in ("line", "cards", "hand", "win"):
            lines.add_column(col)
        for i, ln in enumerate(final["lines"], start=1):
            lines.add_row(str(i), _cards(ln["cards"]), ln["rank"], str(ln["win"]))
        out.print(lines)
    if final.get("double_up"):
        table = Table(title="double-up (each step is its own bet)")
        for col in (
            "step",
            "bet type",
            "staked",
            "banked",
            "dealer",
            "face down",
            "pick",
            "result",
            "amount after",
        ):
            table.add_column(col)
        for st in final["double_up"]:
            table.add_row(
                str(st["n"] + 1),
                st["bet_type"],
                str(st["staked"]),
                str(st["banked"]),
                _cards([st["dealer_card"]]),
                _cards(st["cards"]),
                "" if st["index"] is None else str(st["index"] + 1),
                str(st["result"] or "pending"),
                "" if st["amount_after"] is None else str(st["amount_after"]),
            )
        out.print(table)


def _print_table_round(report: TableRoundReport, out: Console) -> None:
    table = Table(title=f"table round {report.code} ({report.status})")
    for col in ("#", "step", "details"):
        table.add_column(col)
    for s in report.steps:
        details = {k: glyphs(k, v) for k, v in s.items() if k not in ("version", "step")}
        table.add_row(
            str(s["version"]), s["step"], json.dumps(details, default=str, ensure_ascii=False)
        )
    out.print(table)
    if report.seat is not None:
        _print_seat(report.seat, out)
    if not report.ok:
        for f in report.findings:
            out.print(f"[red]MISMATCH[/red] {escape(f.text())}", highlight=False)
    elif report.rederived:
        out.print(
            "[green]OK[/green]: every card and payout re-derives from the revealed shoe seed."
        )
    else:
        out.print("[yellow]shoe live[/yellow]: the seed is revealed after the cut-card round.")


def _print_seat(seat: dict[str, Any], out: Console) -> None:
    out.print(
        f"seat of session {seat['session_id']} (player {seat['player_id']}): {seat['status']}; "
        f"bets {json.dumps(seat['bets'])}; staked {seat['staked']}, paid {seat['paid']}",
        markup=False,
    )
    steps = Table(title="decisions per step (0 = insurance)")
    for col in ("step", "decision", "requested", "automatic"):
        steps.add_column(col)
    for k, d in seat["decisions"].items():
        auto = d["automatic"] or ""
        if d.get("late"):
            auto += f" (late {d['late']['decision']} not applied)"
        steps.add_row(k, str(d["decision"]), str(d["requested"] or ""), auto)
    out.print(steps)
    hands = Table(title="hands (the engine's replay of the recorded inputs)")
    for col in ("hand", "cards", "stake", "outcome", "payout"):
        hands.add_column(col)
    for i, h in enumerate(seat["hands"], start=1):
        extra = " doubled" if h["doubled"] else " split" if h["split"] else ""
        hands.add_row(
            str(i),
            " ".join(glyphs("cards", h["cards"])),
            f"{h['stake']}{extra}",
            h["outcome"],
            str(h["payout"]),
        )
    out.print(hands)
    result = seat.get("result") or {}
    for bet, stake, outcome, payout in result.get("sides", []):
        out.print(
            f"side bet {bet}: staked {stake}, {outcome or 'lost'}, paid {payout}", markup=False
        )
    if result:
        out.print(
            f"insurance paid {result.get('insurance', 0)}; round: staked {result['staked']}, "
            f"returned {result['returned']}",
            markup=False,
        )


def command(args: argparse.Namespace, out: Console) -> int:
    report = run(args.db, args.code, args.keys, args.session)
    return render(report, out, as_json=args.json)
