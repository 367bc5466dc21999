"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no page
missing from the nav) and works offline: no page loads a script, a style sheet or a font
from another host."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REMOTE = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""")


def build(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )


def test_the_site_builds_strict_and_loads_nothing_from_another_host(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = build(site)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 15, [p.name for p in pages]
    remote = {
        str(p.relative_to(site)): REMOTE.findall(p.read_text(encoding="utf-8")) for p in pages
    }
    assert not {page: tags for page, tags in remote.items() if tags}
    assert (site / "reference" / "configuration" / "index.html").exists()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The strict build is what catches a stale link: a page linking to a missing page fails."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# x\n\n[gone](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: material\n  font: false\n")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode != 0
    assert "missing.md" in done.stdout + done.stderr
