"""The requirement-to-test matrix: ``docs/compliance.yaml`` (the data) rendered into
``docs/compliance.md``, and the check CI runs on it (``tests/unit/test_compliance_matrix.py``).

Each row names a requirement (source, clause, the requirement in one sentence), where
croupier meets it in the code, and the tests that prove it; a row whose status is
``not done`` or ``partial`` says why. The check fails when a row names a test that does
not exist, a code path that does not exist, or when a test marked
``@pytest.mark.requirement("ID")`` proves a requirement that has no row or whose row does
not list it.

Regenerate the page after editing the data: ``python -m tests.compliance_matrix``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "compliance.yaml"
PAGE = ROOT / "docs" / "compliance.md"
STATUSES = ("done", "partial", "not done")
MARKER = "requirement"


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    clause: str
    requirement: str
    status: str
    code: tuple[str, ...]
    tests: tuple[str, ...]
    note: str


def load(path: Path = DATA) -> list[Row]:
    doc: Any = yaml.safe_load(path.read_text())
    return [
        Row(
            str(r["id"]),
            str(r["source"]),
            str(r["clause"]),
            " ".join(str(r["requirement"]).split()),
            str(r.get("status", "done")),
            tuple(r.get("code") or ()),
            tuple(r.get("tests") or ()),
            " ".join(str(r.get("note") or "").split()),
        )
        for r in doc["requirements"]
    ]


def _defined(path: Path) -> set[str]:
    """The test ids a test file defines: ``func`` and ``Class::method``."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f"{node.name}::{item.name}")
    return names


def is_test(test_id: str, root: Path = ROOT) -> bool:
    """Whether ``path.py::name`` (a parametrised ``[...]`` suffix allowed) is a test."""
    path, sep, name = test_id.partition("::")
    name = name.split("[", 1)[0]
    file = root / path
    if not sep or not name.split("::")[-1].startswith("test") or not file.is_file():
        return False
    return name in _defined(file)


def marked(root: Path = ROOT) -> dict[str, set[str]]:
    """Every ``@pytest.mark.requirement("ID")`` under ``tests/``: test id -> ids."""
    found: dict[str, set[str]] = {}
    for file in sorted((root / "tests").rglob("test_*.py")):
        rel = file.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(file.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr == MARKER
                ):
                    ids = {a.value for a in deco.args if isinstance(a, ast.Constant)}
                    found.setdefault(f"{rel}::{node.name}", set()).update(map(str, ids))
    return found


def check(rows: list[Row], marks: dict[str, set[str]], root: Path = ROOT) -> list[str]:
    """Every problem of the matrix, as sentences (none: the matrix holds)."""
    problems: list[str] = []
    ids = [r.id for r in rows]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"requirement {dup!r} has more than one row")
    for r in rows:
        if r.status not in STATUSES:
            problems.append(f"{r.id}: status {r.status!r} is not one of {STATUSES}")
        if r.status == "done" and not r.tests:
            problems.append(f"{r.id}: done, but no test proves it")
        if r.status != "done" and not r.note:
            problems.append(f"{r.id}: {r.status}, but the row does not say what is missing")
        for t in r.tests:
            if not is_test(t, root):
                problems.append(f"{r.id}: test {t} does not exist")
        for c in r.code:
            if not (root / c.split("::")[0]).exists():
                problems.append(f"{r.id}: code {c} does not exist")
    by_id = {r.id: r for r in rows}
    for test, reqs in sorted(marks.items()):
        for req in sorted(reqs):
            row = by_id.get(req)
            if row is None:
                problems.append(f"{test} is marked as proving {req!r}, which has no row")
            elif test not in row.tests:
                problems.append(f"{test} is marked as proving {req!r}, but its row omits it")
    return problems


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(rows: list[Row]) -> str:
    lines = [
        "# Compliance: requirements and the tests that prove them",
        "",
        "Generated from [`docs/compliance.yaml`](compliance.yaml) by "
        "`python -m tests.compliance_matrix`; do not edit by hand. CI fails when a row names",
        "a test or a file that does not exist, or when a test marked",
        '`@pytest.mark.requirement("ID")` proves a requirement that has no row here.',
        "",
        "Clauses are cited by the section of the named standard; a row that is not done",
        "says what is missing. Sources: GLI-19 v3.0 (interactive gaming systems), the UK",
        "Gambling Commission's Remote gambling and software technical standards (RTS,",
        "2021), Italy's ADM (the seed rule documents and session reports), AGCO's",
        "Registrar's Standards for Internet Gaming, Pennsylvania (PA) and New Jersey (NJ)",
        "technical standards.",
        "",
        "| id | source, clause | requirement | status | where | proved by |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        where = "<br>".join(f"`{c}`" for c in r.code) or "-"
        proof = "<br>".join(f"`{t}`" for t in r.tests) or "-"
        status = r.status + (f": {r.note}" if r.note else "")
        lines.append(
            f"| {_cell(r.id)} | {_cell(r.source)}, {_cell(r.clause)} | "
            f"{_cell(r.requirement)} | {_cell(status)} | {where} | {proof} |"
        )
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    lines += ["", ", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(rows)} rows.", ""]
    return "\n".join(lines)


def main() -> int:
    rows = load()
    PAGE.write_text(render(rows))
    problems = check(rows, marked())
    for p in problems:
        print(f"compliance: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
