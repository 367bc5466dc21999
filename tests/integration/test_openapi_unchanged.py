"""The HTTP API's OpenAPI document is the committed one: a change to a response or request
model shows up here, where it must be meant.

``tests/fixtures/openapi_v1.json`` was dumped from ``main`` before issue 26 typed the
handlers' results (``python -m tests.integration.test_openapi_unchanged`` rewrites it: do
so only for a change of the API's format that is meant, and say which in the commit).
``INTENDED`` lists every difference from that copy, each with its reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from api.app import create_app
from api.auth import Credentials
from ledger.settings import Settings

FIXTURE = Path(__file__).parent.parent / "fixtures" / "openapi_v1.json"

_TABLE_STATE = "/components/schemas/TableState"
_DRAW = "/paths//v1/sessions/{session_id}/video-poker/draw/post"
_DRAW_BODY = f"{_DRAW}/requestBody/content/application/json/schema"
INTENDED: dict[str, Any] = {
    # issue 23: the table state carries the server's clock (a client tells a closed window)
    f"{_TABLE_STATE}/properties/server_time": {
        "type": "string",
        "title": "Server Time",
        "description": "the server's clock when it answered (ISO 8601, UTC): compare it with "
        "round.deadline to tell whether the window has closed, whatever the client's clock",
    },
    f"{_TABLE_STATE}/required": [
        *("table", "currency", "round", "seat", "options", "statistics", "previous"),
        *("balance", "settings", "server_time"),
    ],
    # issue 23: a video-poker draw takes no body (its holds are optional)
    f"{_DRAW}/description": "Hold the given positions (or the last `hold`, else the proposed "
    "holds) and draw the\nrest, each line from its own deck. The body is optional: none draws "
    "as `{}` does.",
    f"{_DRAW_BODY}/$ref": None,
    f"{_DRAW_BODY}/anyOf": [{"$ref": "#/components/schemas/VideoPokerDraw"}, {"type": "null"}],
    f"{_DRAW_BODY}/title": "Body",
    f"{_DRAW}/requestBody/required": None,
}
"""Path in the document (``/``-separated) -> its value now, where it differs on purpose."""
# issue 26: a player's table command answers its seat's id, which the handler always
# returned and the response model silently dropped (the typed result names it)
INTENDED["/components/schemas/SeatChanged/properties/seat_id"] = {
    "anyOf": [{"type": "string"}, {"type": "null"}],
    "title": "Seat Id",
    "description": "the seat's aggregate id: its events in the log and in the round's "
    "inclusion proof",
}
# The live table's defects (issue 28's end-to-end run): a closed session joins and leaves
# no table (session-closed), and 2x with no bet has its own code (nothing-to-double).
_SEAT = "/paths//v1/sessions/{session_id}/tables/{table}"
INTENDED[f"{_SEAT}/join/post/description"] = (
    "Come to the table (or back after a drop): a seat in the round is marked connected\n"
    "again. Bets are placed with ``bets``; nothing else is needed to join. A closed\n"
    "session joins no table (409 ``session-closed``, nothing written)."
)
INTENDED[f"{_SEAT}/leave/post/description"] = (
    'Leave the table (seed 002 "Disconnessione"): before the betting deadline the\n'
    "seat's bets are cancelled and refunded; after it they stand and the seat gets the\n"
    "automatic decisions; the result is in the history. A closed session is refused\n"
    "(409 ``session-closed``, nothing written)."
)
INTENDED[f"{_SEAT}/double/post/description"] = (
    "2x: double every bet placed, all or none (within the limits and the balance);\n"
    "with no bet placed in the round, 409 ``nothing-to-double``."
)
# Issue 29 added GET /metrics and GET /v1/audit/report (with the report's models).
INTENDED.update(json.loads((FIXTURE.parent / "openapi_issue29.json").read_text()))
# Issue 24 added the table chat (post, moderation, the operator's chat log) and spectators
# (the operator's spectator token, the watch view), with their models.
INTENDED.update(json.loads((FIXTURE.parent / "openapi_issue24.json").read_text()))
# Issue 25: the read side's answers say the log position they reflect and take `at_least`
# (the statement, the wallet transactions); GET /v1/accounts/{player}/balances.
INTENDED.update(json.loads((FIXTURE.parent / "openapi_issue25.json").read_text()))


def current() -> dict[str, Any]:
    credentials = Credentials("operator", "auditor", b"x" * 32, "test", "test")
    doc: dict[str, Any] = create_app(settings=Settings(), credentials=credentials).openapi()
    return doc


def _differences(old: Any, new: Any, path: str = "") -> dict[str, Any]:
    """Every path where ``new`` differs from ``old`` (-> the new value; None if removed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        for key in sorted(set(old) | set(new)):
            if key not in new:
                out[f"{path}/{key}"] = None
            elif key not in old:
                out[f"{path}/{key}"] = new[key]
            else:
                out.update(_differences(old[key], new[key], f"{path}/{key}"))
        return out
    return {} if old == new else {path: new}


def test_the_openapi_document_differs_from_mains_only_where_meant() -> None:
    committed = json.loads(FIXTURE.read_text())
    now = json.loads(json.dumps(current()))  # tuples and the like as JSON reads them back
    assert _differences(committed, now) == INTENDED


def test_a_changed_document_is_reported_by_path() -> None:
    old = {"a": {"b": 1, "c": [1]}, "d": 2}
    new = {"a": {"b": 1, "c": [1, 2], "e": 3}}
    assert _differences(old, new) == {"/a/c": [1, 2], "/a/e": 3, "/d": None}


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
    sys.exit(0)
