"""``X-Log-Position`` on every answer to a POST: the newest log position this worker has
written when it answers, so at or after the command's own events. Pass it as
``at_least`` to a read (``GET /v1/accounts/{player}/statement?at_least=…``) to read your
own writes from the views (:mod:`ledger.readside`).

A retried request answered from the record another worker wrote may carry an older
position than that record's: read with no ``at_least`` (the log's head) after a retry."""

from __future__ import annotations

from typing import Any

HEADER = b"x-log-position"


def header(state: Any) -> tuple[bytes, bytes] | None:
    """The header for the app's ``state``: its casino's newest position (None while the app
    has no casino of its own; :class:`api.edge.Edge` adds it to every POST's answer)."""
    casino = getattr(state, "casino", None)
    if casino is None:
        return None
    return (HEADER, str(getattr(casino, "position", 0)).encode())
