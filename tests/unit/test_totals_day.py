"""The totals view's day of an event: the UTC date of its timestamp, whatever form the
timestamp takes (the transcoder's ``{"_type_", "_data_"}`` object or its text; UTC or
another offset; naive read as UTC). The fast path for UTC text must agree with parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ledger.readside.totals import _day

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
