"""A real ``croupier serve`` subprocess and Debian's chromium for the reference client's
browser tests (issue 24): the server, its players, and the pages' shared checks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import TEST_LIMITS
from tests.integration.conftest import CHROMIUM, CHROMIUM_ARGS

OPERATOR = "play-operator-" + "o" * 24
AUDITOR = "play-auditor-" + "a" * 24
TABLE = "play-1"
# Short windows keep a round near ten seconds; betting is long enough for a few clicks.
WINDOWS = {"betting_ms": 8_000, "insurance_ms": 3_000, "step_ms": 3_000, "grace_ms": 200}
BUY_IN = 100_000
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "play"
AXE = Path(__file__).resolve().parents[1] / "fixtures" / "axe" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    base: str
    process: subprocess.Popen[str]
    log: Path
    client: httpx.Client
    tokens: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)

    def op(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {OPERATOR}"}
        if method != "GET":
            headers["Idempotency-Key"] = uuid.uuid4().hex
        r = self.client.request(method, path, json=body, headers=headers)
        assert r.status_code < 300, (path, r.status_code, r.text)
        return r.json()

    def player(self, name: str, buy_in: int = BUY_IN) -> str:
        """A player with an account and an open session of ``buy_in``; its token."""
        self.op("POST", "/v1/accounts", {"player_id": name, "currency": "EUR"})
        self.op("POST", f"/v1/accounts/{name}/deposits", {"amount": 10 * BUY_IN})
        opened = self.op(
            "POST", "/v1/sessions", {"player_id": name, "buy_in": buy_in, "currency": "EUR"}
        )
        self.tokens[name] = opened["token"]
        self.sessions[name] = opened["session_id"]
        return str(opened["token"])

    def url(self, name: str, table: str = TABLE) -> str:
        return f"{self.base}/play/#token={self.tokens[name]}&table={table}"

    def spectator_url(self, table: str = TABLE) -> str:
        issued = self.op("POST", f"/v1/tables/{table}/spectators", {"minutes": 30})
        return f"{self.base}{issued['play']}"


def start_server(home: Path) -> Iterator[Server]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env.update(TEST_LIMITS)  # tests/conftest.py: the session rate lifted for the test run
    env.update(
        CROUPIER_DATA_DIR=str(home / "data"),
        CROUPIER_OPERATOR_TOKEN=OPERATOR,
        CROUPIER_AUDITOR_TOKEN=AUDITOR,
    )
    port = free_port()
    log = home / "serve.log"
    croupier = Path(sys.executable).with_name("croupier")
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(croupier), "serve", "--port", str(port)],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    server = Server(base, process, log, httpx.Client(base_url=base, timeout=30))
    try:
        server.op("POST", "/v1/tables", {"table": TABLE, "currency": "EUR", "config": WINDOWS})
        yield server
    finally:
        server.client.close()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def launch_browser() -> Iterator[Any]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: scripts/test installs it"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Page:
    """One browser context and its page, with the errors it raised."""

    def __init__(self, browser: Any, url: str, viewport: dict[str, int] = DESKTOP, **kw: Any):
        self.context = browser.new_context(viewport=viewport, **kw)
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.errors: list[str] = []
        """Script errors (an exception in the client): none is expected."""
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.open(url)

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.ready()

    def reload(self) -> None:
        self.page.reload()
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_selector("body[data-ready]", state="attached")
        state = self.attr("body", "data-ready")
        assert state == "true", (state, self.page.inner_text("#notice"), self.errors)

    def attr(self, selector: str, name: str) -> str | None:
        value: str | None = self.page.get_attribute(selector, name)
        return value

    def messages(self) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = self.page.evaluate("window.croupierMessages")
        return got

    def shot(self, name: str) -> Path:
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTEFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.x A/AA violations on the page as it is now."""
    page.add_script_tag(content=AXE.read_text())
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
          const r = await axe.run(document, {runOnly: {type: 'tag',
            values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});
          return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
        }"""
    )
    return found


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
