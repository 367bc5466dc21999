"""Fixtures the integration tests share: a headless Debian chromium for the browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's chromium (scripts/test installs it; never a downloaded browser), driven by
    playwright. Never skipped: without chromium the browser tests fail."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: scripts/test installs it"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
