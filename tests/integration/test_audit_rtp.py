"""``audit-cli rtp`` on a small simulated log (SQLite and PostgreSQL).

The log is played by :mod:`ledger.simulate` from a fixed master seed, plus one voided and
one open round. The command's numbers must equal the sums of the round events read
straight from the rows; voided and open rounds are left out and counted. An empty log is
not a finding: the command says there is nothing to compare and exits 0. A log whose
returns are far from the certified figure is a finding: exit 1.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from audit_cli.main import main as audit_main
from audit_cli.rows import read_rows
from games.red_dog.engine import Outcome, outcome_for, shuffled_deck
from games.rtp import Tally
from games.simulate import Play, RedDogPlan, VideoPokerPlan, round_seed
from ledger import envelope
from ledger.bootstrap import bootstrap
from ledger.simulate import open_casino, simulate_on_ledger
from tests.conftest import Store, _make_store

MASTER = b"tests/integration/test_audit_rtp"
PLANS = [
    VideoPokerPlan("jb-4line", coins=1, lines=4, rounds=10),
    VideoPokerPlan("jb-multi", coins=5, lines=3, rounds=8, coin_value=20, play=Play.OPTIMAL),
    RedDogPlan(rounds=16, bet=200),
]
VP_4LINE = ["video-poker", "jb-4line", "jb-9-6-v1", 1]
RED_DOG = ["red-dog", "classic", "red-dog/5-4-2-1+11", None]


@dataclass
class Log:
    store: Store
    tallies: list[Tally]
    voided_code: str


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Log]:
    path = tmp_path_factory.mktemp("rtp-log")
    with contextlib.contextmanager(_make_store)(request.param, path) as store:
        app = open_casino(store.settings(), store.keyring, MASTER)
        try:
            tallies = simulate_on_ledger(app, PLANS)
            app.open_account("extra:account", "extra", "EUR")
            app.deposit("extra:deposit", "extra", 10_000)
            sid = app.open_session("extra:open", "extra", 10_000).session_id
            voided = app.red_dog_bet("extra:bet", sid, 200)
            if voided.status == "open":
                voided = app.red_dog_see("extra:see", sid)
            app.void_round("extra:void", voided.code, "malfunction drill", "INC-1")
            app.vp_deal("extra:deal", sid, "jb-4line", 10, 1, 4)  # left open
        finally:
            app.close()
        yield Log(store, tallies, voided.code)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = audit_main(["rtp", *args])
    return code, capsys.readouterr().out


def sums_from_rows(db: str) -> dict[tuple[Any, ...], dict[str, int]]:
    """Per group, straight from the round events: settled rounds not voided, their staked
    and paid totals; and the voided and open rounds."""
    started: dict[str, dict[str, Any]] = {}
    settled: dict[str, dict[str, Any]] = {}
    voided: set[str] = set()
    for row in read_rows(db):
        doc = json.loads(envelope.decode(row.state).payload)
        if row.topic == "croupier/round/started@1":
            started[row.originator_id] = doc
        elif row.topic == "croupier/round/settled@1":
            settled[row.originator_id] = doc
        elif row.topic == "croupier/round/voided@1":
            voided.add(row.originator_id)
    out: dict[tuple[Any, ...], dict[str, int]] = {}
    for oid, doc in started.items():
        coins = doc["params"]["coins"] if doc["game"] == "video-poker" else None
        key = (doc["game"], doc["variant"], doc["paytable_id"], coins)
        group = out.setdefault(
            key, dict.fromkeys(("rounds", "staked", "paid", "voided", "open"), 0)
        )
        if oid in voided:
            group["voided"] += 1
        elif oid not in settled:
            group["open"] += 1
        else:
            group["rounds"] += 1
            group["staked"] += settled[oid]["staked"]
            group["paid"] += settled[oid]["payout"]
    return out


def test_json_totals_are_the_sums_of_the_round_events(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "--db", log.store.db, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True, report["problems"]
    expected = sums_from_rows(log.store.db)
    groups = {(g["game"], g["variant"], g["paytable_id"], g["coins"]): g for g in report["groups"]}
    assert set(groups) == set(expected)
    for key, sums in expected.items():
        got = groups[key]
        assert {k: got[k] for k in sums} == sums, key
        (main,) = [m for m in got["measures"] if m["measure"] == "per-staked"]
        assert main["observed"] == float(Fraction(sums["paid"], sums["staked"]))
        assert main["ci"][0] <= main["observed"] <= main["ci"][1]
        assert main["variance"] == "exact" and main["inside"] is True
    # The simulation's own tallies: the same totals (the extra rounds are voided or open).
    keys = [tuple(VP_4LINE), ("video-poker", "jb-multi", "jb-9-6-v1", 5), tuple(RED_DOG)]
    for key, tally in zip(keys, log.tallies, strict=True):
        got = groups[key]
        assert (got["rounds"], got["staked"], got["paid"]) == (
            tally.rounds,
            tally.staked,
            tally.paid,
        )
    assert groups[tuple(RED_DOG)]["voided"] == 1 and groups[tuple(VP_4LINE)]["open"] == 1
    assert (report["rounds"], report["voided"], report["open"]) == (34, 1, 1)


def test_red_dog_is_reported_per_bet_and_per_staked(
    log: Log, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = run(capsys, "--db", log.store.db, "--json")
    (red_dog,) = [g for g in json.loads(out)["groups"] if g["game"] == "red-dog"]
    per_bet, per_staked = red_dog["measures"]
    assert (per_bet["measure"], per_staked["measure"]) == ("per-bet", "per-staked")
    assert red_dog["play"] == "optimal"
    assert round(per_bet["theoretical"], 6) == 0.968446  # seed 003: 96.84 %
    assert round(per_staked["theoretical"], 6) == 0.973282
    net = red_dog["paid"] - red_dog["staked"]
    assert per_bet["observed"] == float(Fraction(red_dog["bet"] + net, red_dog["bet"]))


def test_the_human_table_names_every_group(log: Log, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "--db", log.store.db)
    assert code == 0
    for text in ("jb-4line", "jb-multi", "red-dog", "per-bet", "per-staked", "98.3735 %", "OK"):
        assert text in out
    assert "1 voided and 1 open rounds excluded" in out


def test_plot_writes_a_png(log: Log, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "rtp.png"
    code, out = run(capsys, "--db", log.store.db, "--plot", str(png))
    assert code == 0, out
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000  # three panels with curves, lines and bands
    assert "plot of 3 panel(s) written to" in out


def test_theoretical_table_needs_no_database(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "--theoretical")
    assert code == 0
    assert "99.5439 %" in out and "98.3735 %" in out and "96.8446 %" in out
    code, out = run(capsys, "--theoretical", "--json")
    rows = json.loads(out)["rows"]
    assert code == 0
    by = {(r["variant"], r["play"], r["coins"]): r for r in rows}
    five = by[("jb-4line", "optimal", "5")]
    assert (five["rtp"], five["published"]) == ("99.5439", "98.37")
    assert five["agreement"] == "matches the other coin column (published figures swapped)"
    assert by[("jb-4line", "optimal", "1-4")]["rtp"] == "98.3735"
    assert by[("classic", "raise 7-11, per bet", "-")]["agreement"] == "matches"


def test_an_empty_log_has_nothing_to_compare_and_is_not_a_finding(
    sqlite_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    app = sqlite_store.open()
    app.open_account("a", "alice", "EUR")
    app.close()
    code, out = run(capsys, "--db", sqlite_store.db)
    assert code == 0
    assert "no settled rounds" in out
    code, out = run(capsys, "--db", sqlite_store.db, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["rounds"] == 0 and doc["groups"] == []


def test_a_missing_database_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert audit_main(["rtp", "--db", str(tmp_path / "none.sqlite")]) == 2
    assert "no SQLite database" in capsys.readouterr().err


def test_returns_far_above_the_certified_figure_are_a_finding(
    sqlite_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rigged seed source that deals only Red Dog winners: the log's RTP is far above
    96.84 %, so the theory lies outside the interval and the command exits 1."""

    def wins(seed: bytes) -> bool:
        first, second, third = (c.rank for c in shuffled_deck(seed)[:3])
        return outcome_for(first, second, third) is Outcome.WIN

    rigged = iter([s for s in (round_seed(MASTER, i) for i in range(400)) if wins(s)][:40])
    app = bootstrap(sqlite_store.settings(), sqlite_store.keyring, seed_source=rigged.__next__)
    try:
        simulate_on_ledger(app, [RedDogPlan(rounds=40, bet=200)])
    finally:
        app.close()
    code, out = run(capsys, "--db", sqlite_store.db, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert all(m["inside"] is False for m in doc["groups"][0]["measures"])
    assert "lies outside the 99% interval" in doc["problems"][0]
