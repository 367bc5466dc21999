"""``audit-cli rtp --theoretical`` prints every game's certified table from the registry.

Infinite Blackjack has no rounds on the ledger yet; its registry line (a certified-only
game) is all that puts seed 002's figures in the table and in ``GET /v1/games``. A row
that differs from its published figure is a finding unless its game explains it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_main
from games import registry
from games.audit import Certified, TheoryRow, agreement
from games.blackjack import certified as blackjack
from ledger.bootstrap import bootstrap
from tests.conftest import Store
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = audit_main(["rtp", "--theoretical", *args])
    return code, capsys.readouterr().out


def test_blackjack_rows_appear_with_seed_002s_published_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(capsys, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["problems"] == []
    by = {(r["paytable_id"], r["play"]): r for r in doc["rows"] if r["game"] == "blackjack"}
    main = by[("main, ten-up all-bets", "optimal")]
    assert (main["rtp"], main["published"]) == ("99.4561", "99.47")
    assert main["agreement"] == "DIFFERS: 99.46 %" and "hard 17+" in main["known_difference"]
    assert main["hit_frequency"] is None and main["rtp_exact"] is None
    assert by[("main, ten-up all-bets", "optimal, hit hard 17+")]["rtp"] == "99.4653"
    assert by[("main, ten-up original-only", "optimal")]["rtp"] == "99.5483"
    sides = {
        ("perfect-pairs-25-12-6", "side bet perfect-pairs"): ("95.9036", "95.90"),
        ("21+3-100-40-30-10-5", "side bet 21+3"): ("96.2961", "96.30"),
        ("hot-3-100-20-4-2-1", "side bet hot-3"): ("94.5951", "94.60"),
        ("bust-it-1-2-9-50-100-250", "side bet bust-it"): ("94.1165", "94.12"),
        ("cashout-v1", "always cash out at the first opportunity"): ("96.7956", "96.80"),
    }
    for key, (rtp, published) in sides.items():
        row = by[key]
        assert (row["rtp"], row["published"], row["agreement"]) == (rtp, published, "matches")
        assert row["known_difference"] is None
    assert by[("insurance-2:1", "insurance, per unit insured")]["rtp_exact"] == "384/415"
    # The other games' rows are still there, unchanged.
    assert {r["game"] for r in doc["rows"]} == {"red-dog", "video-poker", "blackjack"}

    code, text = run(capsys)
    assert code == 0
    line = next(ln for ln in text.splitlines() if "main, ten-up all-bets" in ln)
    assert "99.4561 %" in line and "99.47 %" in line and line.rstrip(" │").endswith("-")
    assert "Known difference: seed 002 publishes 99.47 %" in text


def test_an_unexplained_difference_from_a_published_figure_is_a_finding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rtp = Fraction(95, 100)
    row = TheoryRow(
        "toy",
        "v",
        "toy/1",
        "optimal",
        "-",
        rtp,
        "96.00",
        "",
        agreement(rtp, "96.00"),
        Fraction(2),
        None,
    )
    toy = registry.CertifiedGame("toy", Certified(lambda: (row,)))
    monkeypatch.setitem(registry.CERTIFIED_ONLY, "toy", toy)
    code, out = run(capsys, "--json")
    doc = json.loads(out)
    assert code == 1 and not doc["ok"]
    assert doc["problems"] == ["toy/v/toy/1 optimal: DIFFERS: 95.00 % (published 96.00 %)"]
    code, out = run(capsys)
    assert code == 1 and "FINDING: toy/v/toy/1 optimal: DIFFERS: 95.00 %" in out


def test_blackjack_certification_is_computed_once_per_process_and_not_at_import() -> None:
    probe = (
        "import games.registry, api.catalogue, audit_cli.rtp\n"
        "from games.blackjack import certified as b\n"
        "assert b.certified_rows.cache_info().misses == 0, 'computed at import'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert blackjack.certified_rows() is blackjack.certified_rows()


def test_the_catalogue_lists_infinite_blackjacks_certified_figures(store: Store) -> None:
    casino = bootstrap(store.settings(**CREDENTIALS), store.keyring)
    store.apps.append(casino)
    with TestClient(create_app(casino)) as client:
        games = client.get("/v1/games", headers=bearer(OPERATOR)).json()
    entry = games["other_games"]["blackjack"]
    assert entry["id"] == "infinite" and entry["on_the_ledger"] is True
    by = {(r["bet"], r["play"]): r for r in entry["rtp"]}
    main = by[("main, ten-up all-bets", "optimal")]
    assert (main["percent"], main["published"]) == ("99.4561", "99.47")
    assert by[("perfect-pairs-25-12-6", "side bet perfect-pairs")]["agreement"] == "matches"
    assert by[("cashout-v1", "always cash out at the first opportunity")]["percent"] == "96.7956"
    offers = entry["cashout_table"]
    # seed 002: "Incassare paga 0,4-1,77 volte la puntata" (hundredths of the main bet).
    assert offers["id"] == "cashout-v1" and offers["offers"]["hard"]["4"]["2"] == 90
    every = [v for kind in offers["offers"].values() for ups in kind.values() for v in ups.values()]
    assert len(every) == 260 and min(every) >= 40 and max(every) <= 177
    # The games played on the ledger keep their typed entries.
    assert games["red_dog"][0]["id"] == "classic" and games["video_poker"]
