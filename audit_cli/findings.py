"""A finding of ``audit-cli verify``: which check failed, why, and at which row."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """A check that failed: its name (``books-sum``, ``chain-link``, ...), what was found,
    and the row it was found at when there is one."""

    check: str
    message: str
    notification_id: int | None = None
    originator_id: str | None = None
    version: int | None = None
