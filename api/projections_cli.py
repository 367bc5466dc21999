"""``croupier projections``: the read side's views (:mod:`ledger.readside`) on the
configured store.

- ``status``: each view's position and the log's head;
- ``check``: every row of each view compared with what the signed log implies at the
  view's position (each event read is verified); exit 1 and the differing rows if any;
- ``rebuild``: empty a view and fold it again from the log (safe on a running server:
  writers carry on, readers catch the view up as they need it).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ledger.bootstrap import bootstrap
from ledger.settings import Settings


def _chosen(app: Any, names: list[str] | None) -> list[Any]:
    known = app.readside.projections
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise SystemExit(f"error: no projection {', '.join(unknown)} (known: {', '.join(known)})")
    return [known[n] for n in (names or known)]


def cmd_projections(args: argparse.Namespace) -> int:
    app = bootstrap(Settings())
    try:
        chosen = _chosen(app, args.name)
        head = int(app.recorder.max_notification_id() or 0)
        if args.projections_command == "status":
            out: Any = {"head": head, "views": {p.name: p.position() for p in chosen}}
            print(json.dumps(out, indent=2))
            return 0
        if args.projections_command == "rebuild":
            out = {p.name: {"position": p.rebuild()} for p in chosen}
            print(json.dumps(out, indent=2))
            return 0
        for p in chosen:
            p.catch_up()  # then every row the log implies up to its head is compared
        checked = [p.check() for p in chosen]
        print(json.dumps({"head": head, "views": [c.to_dict() for c in checked]}, indent=2))
        return 1 if any(c.differences for c in checked) else 0
    finally:
        app.close()


def add_projections(sub: Any) -> None:
    pr = sub.add_parser("projections", help="the read side's views: status, check, rebuild")
    psub = pr.add_subparsers(dest="projections_command", required=True)
    for name, text in (
        ("status", "each view's position and the log's head"),
        ("check", "compare every view row with the signed log; exit 1 on a difference"),
        ("rebuild", "empty the views and fold them again from the log"),
    ):
        one = psub.add_parser(name, help=text)
        one.add_argument(
            "--name",
            action="append",
            help="only this projection (repeatable): statement, wallet, totals",
        )
        one.set_defaults(func=cmd_projections)
