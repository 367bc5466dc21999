"""The requirement-to-test matrix holds (issue 29): every row's tests and code exist, every
test marked ``@pytest.mark.requirement`` has its row, and docs/compliance.md is the page
generated from docs/compliance.yaml. The check fails on a made-up test id and on a marked
test that no row lists."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.compliance_matrix import DATA, PAGE, Row, check, is_test, load, marked, render


def test_the_matrix_holds() -> None:
    rows = load()
    assert check(rows, marked()) == []
    assert {r.source.split()[0] for r in rows} >= {"GLI-19", "UKGC", "ADM", "AGCO"}
    assert any(r.status == "not done" for r in rows)  # what croupier does not do says so


def test_the_page_is_generated_from_the_data() -> None:
    assert DATA.exists() and PAGE.read_text() == render(load())


def test_a_made_up_test_id_fails_the_check() -> None:
    rows = load()
    made_up = "tests/integration/test_report.py::test_a_report_that_was_never_written"
    assert not is_test(made_up)
    broken = [dataclasses.replace(rows[0], tests=(*rows[0].tests, made_up)), *rows[1:]]
    assert check(broken, marked()) == [f"{rows[0].id}: test {made_up} does not exist"]
    missing_file = "tests/unit/test_nothing_here.py::test_x"
    broken = [dataclasses.replace(rows[0], tests=(missing_file,)), *rows[1:]]
    assert f"{rows[0].id}: test {missing_file} does not exist" in check(broken, marked())


def test_a_marked_test_without_a_row_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import pytest\n\n\n"
        '@pytest.mark.requirement("GLI-19-NOWHERE")\n'
        "def test_proves_something() -> None:\n    assert True\n"
    )
    marks = marked(tmp_path)
    assert marks == {"tests/test_x.py::test_proves_something": {"GLI-19-NOWHERE"}}
    problems = check([], marks, tmp_path)
    assert problems == [
        "tests/test_x.py::test_proves_something is marked as proving 'GLI-19-NOWHERE', "
        "which has no row"
    ]
    row = Row(
        "GLI-19-NOWHERE", "GLI-19", "x", "y", "done", (), ("tests/test_x.py::test_other",), ""
    )
    assert "but its row omits it" in " ".join(check([row], marks, tmp_path))


@pytest.mark.parametrize("status", ["partial", "not done"])
def test_a_row_not_done_must_say_why(status: str) -> None:
    row = Row("X-1", "GLI-19", "c", "r", status, (), (), "")
    assert check([row], {}) == [f"X-1: {status}, but the row does not say what is missing"]
