"""``ledger/`` has no import cycle, counting every import: module level, under
``TYPE_CHECKING`` and inside functions (a cycle patched by an in-function import is
still a cycle). ``games/`` imports nothing from the other packages (DESIGN §1)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path, package: str) -> set[str]:
    """Modules of ``package`` that the file at ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found.update(n for n in names if n.split(".")[0] == package)
    return found


def module_name(path: Path) -> str:
    dotted = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
    return dotted.removesuffix(".__init__")


def graph(package: str) -> dict[str, set[str]]:
    modules = {module_name(p): p for p in (ROOT / package).rglob("*.py")}
    return {m: imports_of(p, package) & set(modules) - {m} for m, p in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_ledger_package_has_no_import_cycle() -> None:
    edges = graph("ledger")
    assert len(edges) > 10  # the check sees the package
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_games_import_nothing_from_the_other_packages() -> None:
    for path in (ROOT / "games").rglob("*.py"):
        for other in ("ledger", "api", "audit_cli", "eventsourcing"):
            assert not imports_of(path, other), f"{path} imports {other}"
