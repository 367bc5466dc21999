"""README's and the docs' commands run, on a fresh copy of the repository, against a real
``croupier serve`` (issue 23): docs cannot go stale silently.

A shell or Python block preceded by ``<!-- run: GROUP -->`` is run: the blocks of one
group, in page order, as one script (they share variables), twice (a walkthrough must
pass a second time: a player made by the first run must not make the second fail).
Every other shell or Python block must say why it is not run (``<!-- not run: … -->``).

The copy holds the tracked files only (no ``data/``), with the test's virtual
environment linked in as ``.venv``; the server is started as README's first command
starts it, with no ``CROUPIER_*`` variable, on a free port that replaces 8000 in the
blocks. When the server stops (SIGINT, as Ctrl-C) it must exit 0 with no traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(
    r"^<!-- (run: (?P<group>[\w-]+)|not run: [^\n]+) -->\n```(?P<lang>sh|python)\n"
    r"(?P<code>.*?)^```$",
    re.S | re.M,
)
ANY_BLOCK = re.compile(r"^```(sh|python)$", re.M)


@dataclass(frozen=True)
class Block:
    page: str
    group: str
    lang: str
    code: str


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks() -> list[Block]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            if m["group"]:
                found.append(Block(str(page.relative_to(ROOT)), m["group"], m["lang"], m["code"]))
    return found


def groups() -> dict[str, list[Block]]:
    out: dict[str, list[Block]] = {}
    for b in blocks():
        out.setdefault(b.group, []).append(b)
    return out


def test_every_shell_and_python_block_is_run_or_says_why_not() -> None:
    unmarked = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        marked = {m.start("lang") - 3 for m in BLOCK.finditer(text)}
        unmarked += [
            f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            for m in ANY_BLOCK.finditer(text)
            if m.start() not in marked
        ]
    assert not unmarked, "mark each with <!-- run: GROUP --> or <!-- not run: why -->"
    assert {"tour", "audit", "client", "lint"} <= set(groups())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


@dataclass
class Served:
    home: Path
    port: int
    process: subprocess.Popen[str]


def fresh_copy(target: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / name)
    (target / ".venv").symlink_to(
        Path(sys.executable).resolve().parent.parent
        if not (ROOT / ".venv").exists()
        else ROOT / ".venv"
    )
    return target


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh_copy(tmp_path_factory.mktemp("fresh-clone"))
    port = free_port()
    log = (home / "serve.log").open("w")
    process = subprocess.Popen(
        [".venv/bin/croupier", "serve", "--port", str(port)],
        cwd=home,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
        assert process.poll() is None, (home / "serve.log").read_text()
    served = Served(home, port, process)
    yield served
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=60)
    log.close()
    output = (home / "serve.log").read_text()
    assert code == 0 and "Traceback" not in output, output[-4000:]


def run_group(served: Served, name: str) -> subprocess.CompletedProcess[str]:
    url = f"http://127.0.0.1:{served.port}"
    sh, py = [], []
    for b in groups()[name]:
        code = b.code.replace("http://127.0.0.1:8000", url)
        (sh if b.lang == "sh" else py).append(code)
    assert not (sh and py), f"group {name} mixes shell and Python"
    if py:
        script = served.home / f"{name}.py"
        script.write_text("\n".join(py))
        argv = [".venv/bin/python", str(script)]
    else:
        script = served.home / f"{name}.sh"
        # -e and -u, not pipefail: `… | head` ends as it does in a reader's shell
        script.write_text("set -eu\n" + "\n".join(sh))
        argv = ["bash", str(script)]
    return subprocess.run(
        argv, cwd=served.home, env=clean_env(), capture_output=True, text=True, timeout=400
    )


@pytest.mark.parametrize("name", ["tour", "client", "audit", "lint"])
def test_the_group_runs_twice_on_a_fresh_copy(served: Served, name: str) -> None:
    for attempt in (1, 2):
        done = run_group(served, name)
        assert done.returncode == 0, (
            f"run {attempt} of {name!r} failed\n--- stdout\n{done.stdout[-6000:]}"
            f"\n--- stderr\n{done.stderr[-6000:]}"
        )
        assert "Traceback" not in done.stderr, done.stderr
