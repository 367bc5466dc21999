"""``audit-cli report``'s output: a console table, CSV, JSON, or an HTML page a regulator
can file, with its charts (matplotlib, embedded as PNG) — one renderer per form, all from
the one typed :class:`audit_cli.report.Report`."""

from __future__ import annotations

import base64
import csv
import html
import io
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console

from audit_cli.output import FoldingTable
from audit_cli.report import (
    Report,
    day_columns,
    rows_for_csv,
    session_columns,
)
from audit_cli.statement import in_range


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f} %"


def write_csv(report: Report, out: TextIO, sessions: bool = False) -> None:
    columns = session_columns() if sessions else day_columns()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows_for_csv(report.sessions if sessions else report.days, columns))


def print_console(report: Report, out: Console, sessions: bool = False) -> None:
    if sessions:
        t = FoldingTable(title="game sessions")
        for c in session_columns():
            t.add_column(c)
        for row in rows_for_csv(report.sessions, session_columns()):
            t.add_row(*(str(v) for v in row))
        out.print(t)
        return
    t = FoldingTable(title=f"per day, game, variant, currency (UTC and {report.zone})")
    for c in ("zone", "day", "game", "variant", "cur", "rounds", "voided", "stakes", "wins"):
        t.add_column(c)
    for c in ("refunds", "reversed", "GGR", "observed RTP", f"{report.level:.0%} CI", "certified"):
        t.add_column(c)
    for d in report.days:
        ci = "-" if d.rtp_low is None else f"{_pct(d.rtp_low)} .. {_pct(d.rtp_high)}"
        t.add_row(
            d.zone, d.day, d.game, d.variant, d.currency, str(d.rounds), str(d.voided),
            str(d.stakes), str(d.wins), str(d.refunds), str(d.reversed), str(d.ggr),
            _pct(d.rtp_observed), ci, _pct(d.rtp_certified),
        )  # fmt: skip
    out.print(t)
    for total in report.totals:
        out.print(
            f"total {total.currency}: {total.rounds} rounds, {total.voided} voided, "
            f"{total.open_rounds} open; stakes {total.stakes}, wins {total.wins}, refunds "
            f"{total.refunds}, reversed {total.reversed}; GGR {total.ggr} (minor units)",
            markup=False,
        )
    for finding in report.findings:
        out.print(f"FINDING: {finding}", markup=False)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def charts(report: Report) -> list[tuple[str, str]]:
    """(caption, base64 PNG): GGR per day by game, and observed RTP against certified."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[tuple[str, str]] = []
    utc = [d for d in report.days if d.zone == "UTC"]
    for currency in sorted({d.currency for d in utc}):
        rows = [d for d in utc if d.currency == currency]
        days = sorted({d.day for d in rows})
        games = sorted({f"{d.game}/{d.variant}" for d in rows})
        fig, ax = plt.subplots(figsize=(8, 3.5))
        width = 0.8 / max(1, len(games))
        for i, g in enumerate(games):
            by_day = {d.day: d.ggr for d in rows if f"{d.game}/{d.variant}" == g}
            xs = [j + i * width for j in range(len(days))]
            ax.bar(xs, [by_day.get(day, 0) for day in days], width, label=g)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(days))], days, rotation=30)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylabel(f"GGR ({currency}, minor units)")
        ax.legend(fontsize=8)
        out.append((f"Gross gaming revenue per UTC day, {currency}", _png(fig)))
        plt.close(fig)
    measured = [d for d in utc if d.rtp_observed is not None]
    if measured:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        labels = [f"{d.day}\n{d.game}/{d.variant}\n{d.currency}" for d in measured]
        xs = list(range(len(measured)))
        ys = [float(d.rtp_observed or 0) for d in measured]
        pairs = list(zip(ys, measured, strict=True))
        lows = [y - d.rtp_low if d.rtp_low is not None else 0 for y, d in pairs]
        highs = [d.rtp_high - y if d.rtp_high is not None else 0 for y, d in pairs]
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", capsize=3,
                    label=f"observed ({report.level:.0%} CI)")  # fmt: skip
        certified = [
            (x, d.rtp_certified) for x, d in zip(xs, measured, strict=True) if d.rtp_certified
        ]
        if certified:
            ax.scatter([x for x, _ in certified], [c for _, c in certified], marker="_", s=400,
                       color="red", label="certified")  # fmt: skip
        ax.set_xticks(xs, labels, fontsize=7)
        ax.set_ylabel("RTP")
        ax.legend(fontsize=8)
        out.append(("Observed RTP per UTC day against the certified figure", _png(fig)))
        plt.close(fig)
    return out


TOTAL_COLUMNS = ["currency", "rounds", "voided", "open", "stakes", "wins", "refunds", "reversed"]
TOTAL_COLUMNS.append("GGR")


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_html(report: Report, path: Path, source: str) -> None:
    days = [
        [d.zone, d.day, d.game, d.variant, d.currency, d.rounds, d.voided, d.stakes, d.wins,
         d.refunds, d.reversed, d.ggr, _pct(d.rtp_observed),
         "-" if d.rtp_low is None else f"{_pct(d.rtp_low)} .. {_pct(d.rtp_high)}",
         _pct(d.rtp_certified)]
        for d in report.days
    ]  # fmt: skip
    totals = [
        [t.currency, t.rounds, t.voided, t.open_rounds, t.stakes, t.wins, t.refunds, t.reversed,
         t.ggr]
        for t in report.totals
    ]  # fmt: skip
    figures = "".join(
        f'<figure><img alt="{html.escape(c)}" src="data:image/png;base64,{png}">'
        f"<figcaption>{html.escape(c)}</figcaption></figure>"
        for c, png in charts(report)
    )
    findings = "".join(f"<li>{html.escape(f)}</li>" for f in report.findings) or "<li>none</li>"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>croupier regulator report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #999;padding:2px 6px;text-align:right}}th{{background:#eee}}</style>
</head><body>
<h1>Regulator report</h1>
<p>Computed from the signed log alone by <code>audit-cli report</code> ({html.escape(source)}).
Money in minor units. GGR = stakes - wins - refunds + wins reversed. Days in UTC and in
{html.escape(report.zone)}. Observed RTP over the rounds settled that day with its
{report.level:.0%} confidence interval; certified: the games' exact figure for the bets
placed (stake-weighted).</p>
<h2>Totals</h2>
{_table(TOTAL_COLUMNS, totals)}
<h2>Charts</h2>{figures}
<h2>Per day, game, variant and currency</h2>
{_table(["zone", "day", "game", "variant", "currency", "rounds", "voided", "stakes", "wins",
         "refunds", "reversed", "GGR", "observed RTP", "CI", "certified RTP"], days)}
<h2>Game sessions</h2>
{_table(session_columns(), [list(r) for r in rows_for_csv(report.sessions, session_columns())])}
<h2>Findings</h2><ul>{findings}</ul>
</body></html>
"""  # fmt: skip
    path.write_text(page)


def window(report: Report, start: str | None, end: str | None) -> Report:
    if start is None and end is None:
        return report
    days = [d for d in report.days if in_range(d.day, start, end)]
    sessions = [s for s in report.sessions if in_range(s.opened_at, start, end)]
    return Report(report.zone, report.level, days, sessions, report.totals, report.findings)
