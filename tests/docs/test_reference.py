"""The reference pages and the benchmark tables are generated from the code
(docs/gen/reference.py): a page that differs from what the code generates now, or a
setting, command-line argument or error code without a description, fails here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ledger.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "gen"))
import reference  # noqa: E402  (docs/gen is not a package)


def test_every_generated_page_is_up_to_date() -> None:
    stale = reference.stale()
    assert not stale, f"regenerate with `python docs/gen/reference.py`: {stale}"


def test_every_setting_has_a_description() -> None:
    assert reference.undocumented_settings() == []


def test_a_setting_without_a_docstring_is_reported() -> None:
    class More(Settings):
        undocumented_knob: int = 1

    assert reference.undocumented_settings(More) == ["undocumented_knob"]


def test_every_command_and_argument_has_a_help_text() -> None:
    assert reference.undocumented_arguments() == []


def test_every_error_code_has_a_status_and_a_meaning() -> None:
    codes = reference.error_codes()
    assert reference.undocumented_errors() == []
    # the ledger's, the tables', the games' and the HTTP layer's own codes are all there
    for code in ("account-exists", "betting-closed", "invalid-holds", "too-many-streams"):
        assert code in codes
    assert codes["account-exists"][0] == {409} and codes["table-not-found"][0] == {404}


def test_the_configuration_page_names_every_variable_with_its_default() -> None:
    page = reference.configuration_page()
    for name in Settings.model_fields:
        assert f"`CROUPIER_{name.upper()}`" in page
    assert "| `CROUPIER_MAX_BODY_BYTES` | `65536` |" in page


def test_the_http_reference_lists_every_route_of_the_app() -> None:
    doc = reference.openapi()
    page = reference.http_api_page(doc)
    for path, methods in doc["paths"].items():
        for method in methods:
            assert f"### `{method.upper()} {path}`" in page


def test_benchmark_tables_show_command_date_machine_load_and_baseline(tmp_path: Path) -> None:
    line = {
        "bench": "bench_http",
        "run": "red-dog workers=1",
        "command": "python bench/bench_http.py --workers 1",
        "date": "2026-12-02T09:10:11Z",
        "machine": {"cpu": "Xeon", "cores": 2, "python": "3.11.2", "system": "Linux 6.1"},
        "load": {"before": [0.4, 0.3, 0.2], "after": [1.9, 0.8, 0.4]},
        "figures": {"rounds_per_s": 301.2},
        "baseline": {"rounds_per_s": 250.0},
    }
    (tmp_path / "bench_http.jsonl").write_text(json.dumps(line) + "\n")
    page = reference.benchmarks_page(tmp_path)
    row = next(x for x in page.splitlines() if x.startswith("| 2026-12-02"))
    for text in (
        "red-dog workers=1",
        "`python bench/bench_http.py --workers 1`",
        "Xeon, 2 cores",
        "0.4 → 1.9",
        "rounds_per_s 301",
        "rounds_per_s 250",
    ):
        assert text in row
