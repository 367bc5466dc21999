"""The totals view's day of an event: the UTC date of its timestamp, whatever form the
timestamp takes (the transcoder's ``{"_type_", "_data_"}`` object or its text; UTC or
another offset; naive read as UTC). The fast path for UTC text must agree with parsing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ledger.readside.totals import _day, _moves, _text

OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-11))])


def parsed_day(text: str) -> str:
    when = datetime.fromisoformat(text)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).date().isoformat()


@given(st.datetimes(timezones=st.none() | OFFSETS))
def test_the_day_is_the_utc_date_of_the_timestamp(when: datetime) -> None:
    text = when.isoformat()
    assert _day({"timestamp": text}) == parsed_day(text)
    assert _day({"timestamp": {"_type_": "datetime_iso", "_data_": text}}) == parsed_day(text)


def test_an_offset_near_midnight_moves_the_day() -> None:
    assert _day({"timestamp": "2026-12-03T23:30:00+00:00"}) == "2026-12-03"
    assert _day({"timestamp": "2026-12-03T23:30:00-02:00"}) == "2026-12-04"
    assert _day({"timestamp": "2026-12-03T00:30:00+02:00"}) == "2026-12-02"


MOVE_VALUES = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats())


@given(st.lists(st.lists(MOVE_VALUES, max_size=5), max_size=4))
def test_a_parked_rows_moves_are_the_text_json_dumps_writes_and_read_back(
    moves: list[list[object]],
) -> None:
    """A parked row's ``moves`` are written as ``json.dumps`` writes them (a view written
    before the fast path must compare equal to a fold after it) and read back whole."""
    text = _text(moves)
    assert text == json.dumps(moves)
    back = _moves(text)
    assert json.dumps(back) == text
