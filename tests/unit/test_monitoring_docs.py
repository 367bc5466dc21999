"""The Grafana dashboard and the Prometheus alert rules in docs/monitoring (issue 29) load,
fit their schema, and name only metrics croupier exports; every metric is on the dashboard
and the alerts the operator needs are there."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from ledger.metrics import ALL

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "monitoring" / "grafana-dashboard.json"
ALERTS = ROOT / "docs" / "monitoring" / "alerts.yml"
SCHEMA = ROOT / "tests" / "fixtures" / "grafana-dashboard.schema.json"
EXPORTED = {m._name for m in ALL}
SERIES = re.compile(r"\bcroupier_[a-z_]+")


def named(expr: str) -> set[str]:
    """The metrics an expression reads (a series' _total/_bucket/_count/_sum suffix off)."""
    out = set()
    for series in SERIES.findall(expr):
        for suffix in ("_total", "_bucket", "_count", "_sum"):
            if series.endswith(suffix) and series.removesuffix(suffix) in EXPORTED:
                series = series.removesuffix(suffix)
        out.add(series)
    return out


def dashboard() -> Any:
    return json.loads(DASHBOARD.read_text())


def test_the_dashboard_fits_grafanas_dashboard_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    errors = [e.message for e in jsonschema_rs.validator_for(schema).iter_errors(dashboard())]
    assert errors == []


def test_the_schema_check_can_fail() -> None:
    broken = dashboard()
    del broken["panels"][0]["gridPos"]
    broken["panels"][1]["targets"][0]["refId"] = "a1"
    schema = json.loads(SCHEMA.read_text())
    assert len(list(jsonschema_rs.validator_for(schema).iter_errors(broken))) == 2


def test_every_panel_reads_exported_metrics_and_every_metric_has_a_panel() -> None:
    used: set[str] = set()
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            names = named(target["expr"])
            assert names and names <= EXPORTED, (panel["title"], names - EXPORTED)
            used |= names
    assert used == EXPORTED
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids))


@pytest.mark.requirement("UKGC-RTS-SEC-A12-MON")
def test_the_alert_rules_load_and_cover_what_the_operator_must_hear() -> None:
    doc = yaml.safe_load(ALERTS.read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    for rule in rules:
        assert {"alert", "expr", "labels", "annotations"} <= rule.keys(), rule
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"]
        assert named(rule["expr"]) and named(rule["expr"]) <= EXPORTED, rule["alert"]
    by_name = {r["alert"]: r["expr"] for r in rules}
    assert "croupier_checkpoint_age_seconds" in by_name["CroupierCheckpointStale"]
    assert "> 120" in by_name["CroupierCheckpointStale"]  # older than 2 minutes
    assert "croupier_sealer_errors_total" in by_name["CroupierSealerErrors"]
    assert "croupier_upkeep_processes" in by_name["CroupierNoUpkeep"]
    assert "croupier_table_phase_lag_seconds" in by_name["CroupierTableBehindDeadlines"]
    assert "croupier_seamless_outbox_depth" in by_name["CroupierOutboxGrowing"]
