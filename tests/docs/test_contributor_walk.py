"""The contributor walk (docs/contributor-walk.md) names code that exists: every
``module:function`` it names imports, every file it names is in the repository, and each
walk stays within 15 hops."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributor-walk.md"
NAME = re.compile(r"`([a-z_][\w.]*):([A-Za-z_][\w.]*)`")
FILE = re.compile(r"`((?:[\w-]+/)+[\w-]*(?:\.py)?)`")


def _resolve(module: str, qualname: str) -> object:
    found: object = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def test_every_name_on_the_walk_imports() -> None:
    names = NAME.findall(PAGE.read_text())
    assert len(names) >= 20, names  # the walks are written by name
    missing = []
    for module, qualname in names:
        try:
            _resolve(module, qualname)
        except (ImportError, AttributeError) as e:
            missing.append(f"{module}:{qualname} ({e})")
    assert not missing, missing


def test_a_missing_name_is_caught() -> None:
    # The check above can fail: a name that does not exist does not resolve.
    for module, qualname in [("audit_cli.verify", "_books"), ("audit_cli.nowhere", "main")]:
        try:
            _resolve(module, qualname)
        except (ImportError, AttributeError):
            continue
        raise AssertionError(f"{module}:{qualname} resolved")


def test_every_file_on_the_walk_exists() -> None:
    files = FILE.findall(PAGE.read_text())
    assert files
    assert [f for f in files if not (ROOT / f).exists()] == []


def test_each_walk_takes_at_most_15_hops() -> None:
    sections = re.split(r"^## ", PAGE.read_text(), flags=re.M)[1:]
    walks = [s for s in sections if re.search(r"^1\. ", s, flags=re.M)]
    assert walks
    for walk in walks:
        hops = re.findall(r"^(\d+)\. ", walk, flags=re.M)
        assert 1 <= len(hops) <= 15, (walk.splitlines()[0], len(hops))
