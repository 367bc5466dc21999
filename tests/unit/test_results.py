"""Typed results and handlers: one handler per command, a wire form that reads back."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import ClassVar

import pytest

from ledger import commands as c
from ledger.handlers import Handlers
from ledger.results import AccountMoved, AccountOpened, Result, wire_of
from ledger.unit_of_work import UnitOfWork


@dataclass(frozen=True, kw_only=True)
class Listed(Result):
    items: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class ListThings(c.Command[Listed]):
    name: ClassVar[str] = "test_list_things"


def list_things(uow: UnitOfWork, cmd: ListThings) -> Listed:
    return Listed(items=("a", "b"))


def test_a_command_knows_its_result_type_from_its_declaration() -> None:
    assert c.Deposit.result_type is AccountMoved
    assert c.OpenAccount.result_type is AccountOpened
    assert ListThings.result_type is Listed


def test_a_result_is_frozen_and_its_wire_form_is_a_json_object() -> None:
    result = Listed(items=("a", "b"))
    with pytest.raises(FrozenInstanceError):
        result.note = "x"  # type: ignore[misc]
    assert result.wire() == {"items": ["a", "b"], "note": None}


def test_a_recorded_answer_reads_back_with_defaults_for_fields_added_since() -> None:
    assert ListThings.answer_from({"items": ["a"]}) == Listed(items=["a"])  # type: ignore[arg-type]
    assert ListThings.answer_from({"items": [], "note": "n", "later": 1}).note == "n"


def test_a_recorded_answer_without_a_required_field_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"Listed lacks \['items'\]"):
        ListThings.answer_from({"note": "n"})


def test_a_command_without_a_result_type_answers_its_recorded_object() -> None:
    @dataclass(frozen=True)
    class Untyped(c.Command):
        name: ClassVar[str] = "test_untyped"

    assert Untyped.answer_from({"a": 1}) == {"a": 1}
    assert wire_of({"a": 1}) == {"a": 1}


def test_each_command_type_has_one_handler() -> None:
    handlers = Handlers()
    handlers.add(ListThings.handled_by(list_things))
    assert handlers[ListThings] is list_things and list(handlers) == [ListThings]
    with pytest.raises(ValueError, match="ListThings already has a handler"):
        handlers.add(ListThings.handled_by(list_things))
