"""Console and tables of ``audit-cli`` that never cut a value an investigator copies.

Piped (stdout not a terminal) or with ``--wide``, the console is as wide as the widest
line, so no column is shrunk; on a terminal, every column folds a long value over several
lines instead of eliding it with "…" (game codes, fingerprints, ids, timestamps).
"""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console
from rich.table import Table

UNLIMITED = 100_000
"""The width of a piped or ``--wide`` console: wider than any line we print."""


def console(wide: bool = False, file: IO[str] | None = None) -> Console:
    probe = Console(file=file)
    if wide or not probe.is_terminal:
        return Console(file=file, width=UNLIMITED, soft_wrap=True)
    return probe


class FoldingTable(Table):
    """A table whose columns fold long values over lines instead of eliding them."""

    def add_column(self, header: Any = "", *args: Any, **options: Any) -> None:
        options.setdefault("overflow", "fold")
        options.setdefault("no_wrap", False)
        super().add_column(header, *args, **options)
