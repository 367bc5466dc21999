"""``croupier serve`` with nothing configured: SQLite in the data directory, keys, tokens
and the session-token secret generated on first run (files 0600), and a checkpoint
written when it stops; restarting it keeps the same tokens."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from audit_cli.main import main as audit_cli
from tests.conftest import TEST_LIMITS

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def launch(
    data_dir: Path,
    *args: str,
    startup_seconds: float = 120,
    cwd: Path | None = None,
    access_log: bool = False,
    descriptors: int | None = None,
    root: Path | None = None,
    entry: Path | None = None,
    **env_extra: str,
) -> tuple[str, int, subprocess.Popen[str]]:
    """``croupier serve [args]`` in a child process on a free port (nothing inherited from
    this environment's CROUPIER_/POSTGRES_ settings), once /health answers; run in
    ``cwd`` (default: the data directory), with at most ``descriptors`` open files if given
    (``ulimit -n``); the server's code from ``root`` (default: this checkout; a bench
    compares another commit's server with the same load generator); ``entry``: a script
    run in place of ``-m api.cli`` with the same arguments (a bench's wrapper of it)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env.update(TEST_LIMITS)  # tests/conftest.py: limits lifted for the test run
    env.update(CROUPIER_DATA_DIR=str(data_dir), PYTHONPATH=str(root or ROOT), **env_extra)
    cli = ["-m", "api.cli"] if entry is None else [str(entry)]
    cmd = [sys.executable, *cli, "serve", "--port", str(port)]
    cmd += [*([] if access_log else ["--no-access-log"]), *args]
    # Its own process group: a failed start kills the workers of `--workers N` too (orphaned
    # workers would hold the output pipe open and hang communicate()).
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd or data_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=None if descriptors is None else (lambda: _limit_files(descriptors)),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_seconds
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return base, port, proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"croupier serve did not start: {proc.communicate()[0]}")
        time.sleep(0.1)


def _limit_files(descriptors: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))


@contextmanager
def serving(data_dir: Path) -> Iterator[str]:
    base, _, proc = launch(data_dir)
    try:
        yield base
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        # uvicorn shuts down gracefully, then re-raises SIGTERM for the exit status.
        assert proc.returncode in (0, -signal.SIGTERM), out
        assert "Application shutdown complete" in out
    assert f"tokens: {data_dir / 'api-tokens.json'}" in out
    assert f"secret: {data_dir / 'keys' / 'api-secret.key'}" in out


def test_serve_generates_its_credentials_once_and_seals_on_stop(tmp_path: Path) -> None:
    with serving(tmp_path) as base:
        tokens_file = tmp_path / "api-tokens.json"
        tokens = json.loads(tokens_file.read_text())
        for path in (tokens_file, tmp_path / "keys" / "api-secret.key"):
            assert path.stat().st_mode & 0o777 == 0o600, path
        op = {"Authorization": f"Bearer {tokens['operator']}"}
        r = httpx.post(
            f"{base}/v1/accounts",
            json={"player_id": "ann", "currency": "EUR"},
            headers={**op, "Idempotency-Key": "open-ann"},
        )
        assert r.status_code == 201, r.text
        aud = {"Authorization": f"Bearer {tokens['auditor']}"}
        assert httpx.get(f"{base}/v1/audit/keys", headers=aud).status_code == 200
        assert httpx.get(f"{base}/openapi.json").json()["info"]["title"] == "croupier"
        assert httpx.get(f"{base}/docs").status_code == 200

    with serving(tmp_path) as base:
        assert json.loads(tokens_file.read_text()) == tokens
        r = httpx.get(f"{base}/v1/accounts/ann", headers=op)
        assert (r.status_code, r.json()["balance"]) == (200, 0)

    # Stopping sealed a checkpoint over everything; the log verifies with the default keys.
    pin = str(tmp_path / "keys" / "keyring.json")  # names the genesis key (issue 11)
    assert (
        audit_cli(["verify", "--db", str(tmp_path / "casino.sqlite"), "--pin", pin, "--jobs", "1"])
        == 0
    )
