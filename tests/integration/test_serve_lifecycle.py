"""``croupier serve`` as a newcomer runs it (issue 23): a taken port or a data directory
another server uses is one line on stderr and exit 2; Ctrl-C with a table stream open ends
the stream cleanly (a complete response), exits 0 at once with no traceback and writes the
final checkpoint; ``audit-cli … | head`` ends quietly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    return {**env, "CROUPIER_DATA_DIR": str(data)}


def serve(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN / "croupier"), "serve", "--port", str(port)],
        env=env_for(data),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


@dataclass
class Server:
    data: Path
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def operator(self) -> dict[str, str]:
        tokens = json.loads((self.data / "api-tokens.json").read_text())
        return {"Authorization": f"Bearer {tokens['operator']}"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    data, port, log = tmp_path / "data", free_port(), tmp_path / "serve.log"
    process = serve(data, port, log)
    deadline = time.monotonic() + 90
    while True:
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    yield Server(data, port, process, log)
    if process.poll() is None:
        process.kill()
        process.wait()


def test_a_taken_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(BIN / "croupier"), "serve", "--port", str(port)],
            env=env_for(tmp_path / "data"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: cannot listen")
    assert f"127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stdout


@pytest.mark.parametrize(
    ("command", "variable", "value", "named"),
    [
        (
            "croupier",
            "CROUPIER_MAX_CONNECTIONS",
            "abc",
            "valid integer, unable to parse string as an integer (got 'abc')",
        ),
        ("croupier", "CROUPIER_CORS_ALLOWED_ORIGINS", "https://a.example", "not valid JSON"),
        ("croupier", "CROUPIER_CHECKPOINT_EVERY", "-5", "must be 0 or more, got -5"),
        ("croupier", "CROUPIER_STREAM_POLL_SECONDS", "nan", "must be 0 or more"),
        ("audit-cli", "CROUPIER_LOG_FORMAT", "xml", "'auto', 'json' or 'text'"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, command: str, variable: str, value: str, named: str
) -> None:
    argv = ["serve", "--port", str(free_port())] if command == "croupier" else ["rtp"]
    env = {**env_for(tmp_path / "data"), variable: value, "COLUMNS": "300"}
    done = subprocess.run(
        [str(BIN / command), *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    line = " ".join(done.stderr.split())  # rich folds at the terminal's width
    assert line.startswith(f"error: bad setting {variable}: "), line
    assert named in line, line


def test_a_second_server_on_the_same_data_directory_is_refused(
    server: Server, tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(BIN / "croupier"), "serve", "--port", str(free_port())],
        env=env_for(server.data),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1
    assert "another croupier serve already uses" in done.stderr
    assert str(server.process.pid) in done.stderr
    assert httpx.get(f"{server.base}/health").status_code == 200  # the first one serves on


def test_ctrl_c_with_a_stream_open_ends_it_cleanly_and_writes_the_last_checkpoint(
    server: Server,
) -> None:
    api, op = httpx.Client(base_url=server.base, timeout=30), server.operator()

    def post(path: str, body: dict[str, object], key: str) -> dict[str, str]:
        r = api.post(path, json=body, headers={**op, "Idempotency-Key": key})
        assert r.is_success, r.text
        return dict(r.json())

    post("/v1/accounts", {"player_id": "ann", "currency": "EUR"}, "a")
    post("/v1/accounts/ann/deposits", {"amount": 10_000}, "d")
    token = post("/v1/sessions", {"player_id": "ann", "buy_in": 5_000}, "s")["token"]
    lines: list[str] = []
    ended: list[BaseException | None] = []
    opened = threading.Event()

    def listen() -> None:
        try:
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.stream(
                "GET", f"{server.base}/v1/tables/ibj-1/stream", headers=headers, timeout=60
            ) as stream:
                for line in stream.iter_lines():
                    lines.append(line)
                    opened.set()
            ended.append(None)
        except BaseException as e:  # a broken transfer shows here
            ended.append(e)
            opened.set()

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    assert opened.wait(30) and not ended, ended  # the stream is open and has said something
    started = time.monotonic()
    server.process.send_signal(signal.SIGINT)
    code = server.process.wait(timeout=60)
    took = time.monotonic() - started
    reader.join(10)
    output = server.log.read_text()
    assert code == 0, output
    assert ended == [None], ended  # the stream ended as a complete response
    assert "Traceback" not in output and "CancelledError" not in output, output
    assert took < 4.5, f"shutdown waited {took:.1f} s for the stream (the old 5 s timeout)"
    verify = subprocess.run(
        [str(BIN / "audit-cli"), "verify", "--trust-local-keyring", "--json"],
        env=env_for(server.data),
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(verify.stdout)
    assert report["ok"], report
    assert report["events_not_yet_covered"] == 0  # the final checkpoint covers everything


def test_the_start_up_lines_name_the_browser_client_and_it_is_served(server: Server) -> None:
    lines = server.log.read_text()
    assert f"browser client: {server.base}/play/#token=<session token>" in lines, lines
    page = httpx.get(f"{server.base}/play/", timeout=10)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def test_audit_cli_piped_into_a_reader_that_stops_ends_quietly(server: Server) -> None:
    api, op = httpx.Client(base_url=server.base, timeout=30), server.operator()
    for key, path, body in (
        ("a", "/v1/accounts", {"player_id": "bo", "currency": "EUR"}),
        *((f"d{i}", "/v1/accounts/bo/deposits", {"amount": 100 + i}) for i in range(40)),
    ):
        assert api.post(path, json=body, headers={**op, "Idempotency-Key": key}).is_success
    reader, writer = os.pipe()
    os.close(reader)  # the reader has gone before audit-cli writes a byte (`| head -0`)
    done = subprocess.run(
        [str(BIN / "audit-cli"), "statement", "bo", "--csv"],
        env=env_for(server.data),
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(writer)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141  # as a shell tool ended by SIGPIPE
