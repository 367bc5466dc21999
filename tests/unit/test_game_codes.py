"""Game codes (ledger/rounds.py): the format a dispute investigator types, and random
characters drawn uniformly from the 32-character alphabet."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone

from ledger.rounds import CODE_ALPHABET, new_game_code, random_code
from ledger.tables.runner import game_code

START = datetime(2026, 12, 5, 4, 30, 15, tzinfo=timezone(timedelta(hours=2)))
CHARS = f"[{CODE_ALPHABET}]"


def test_a_code_names_its_game_and_gmt_start_then_random_characters() -> None:
    assert re.fullmatch(rf"RD-20261205-023015-{CHARS}{{4}}", new_game_code("RD", START))
    assert re.fullmatch(rf"IBJ-20261205-023015-{CHARS}{{6}}", game_code(START))
    assert START.astimezone(UTC).hour == 2


def test_random_characters_are_uniform_over_the_alphabet() -> None:
    draws = Counter("".join(random_code(64) for _ in range(1_000)))
    assert set(draws) == set(CODE_ALPHABET)
    expected = 64_000 / 32
    chi2 = sum((n - expected) ** 2 / expected for n in draws.values())
    # 31 degrees of freedom: above 80 happens by chance about once in a million runs;
    # a draw that skipped or doubled one character (b % 31) would be in the thousands
    assert chi2 < 80, draws


def test_codes_differ() -> None:
    assert len({random_code(6) for _ in range(1_000)}) > 990
