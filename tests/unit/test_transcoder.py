"""The event transcoder (:mod:`ledger.transcoder`) writes exactly the library's bytes:
for generated states (every kind of value an event may hold, the ones orjson would spell
differently included) and for every event of the committed logs, so signatures, event
hashes and old logs are unchanged by it."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import envelope
from ledger.contracts import RoundStatus
from ledger.transcoder import OrjsonTranscoder, plain

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def registered(transcoder: JSONTranscoder) -> JSONTranscoder:
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return transcoder


LIBRARY = registered(JSONTranscoder())
OURS = registered(OrjsonTranscoder())


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # past 64 bits too: orjson refuses them, the library writes them
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=("Cs",))),  # control characters, any script
    st.uuids(),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.sampled_from(RoundStatus),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=12,
)
states = st.dictionaries(st.text(max_size=12), values, max_size=8)


@settings(max_examples=150, deadline=None)
@given(states)
def test_a_state_is_encoded_as_the_library_encodes_it(state: dict[str, Any]) -> None:
    assert OURS.encode(state) == LIBRARY.encode(state)
    assert OURS.decode(OURS.encode(state)) == LIBRARY.decode(LIBRARY.encode(state))


def test_orjson_writes_only_what_it_spells_as_the_library_does() -> None:
    at = datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    assert plain({"a": [1, "x", None, True, {"b": at}], "s": RoundStatus.OPEN})
    assert not plain({"a": [{"b": UUID(int=1)}]})
    assert not plain({"a": (1, 2.5)})
    # A value orjson would spell differently: the library's spelling is what is stored.
    assert OURS.encode({"id": UUID(int=1)}) == LIBRARY.encode({"id": UUID(int=1)})
    assert b"uuid_hex" in OURS.encode({"id": UUID(int=1)})
    assert OURS.encode({"n": 2**70, 1: "k"}) == LIBRARY.encode({"n": 2**70, 1: "k"})
    assert OURS.encode({"d": Decimal("1.10")}) == LIBRARY.encode({"d": Decimal("1.10")})


@pytest.mark.parametrize("log", ["legacy_log_v1", "legacy-v01", "legacy_idle_table"])
def test_every_stored_event_of_a_committed_log_is_encoded_to_its_bytes(
    log: str, tmp_path: Path
) -> None:
    """Each stored payload, decoded and encoded again, gives back its own bytes: the
    payloads the signatures cover are what this transcoder writes for those events."""
    copy = tmp_path / "casino.sqlite"
    shutil.copy(FIXTURES / log / "casino.sqlite", copy)
    with sqlite3.connect(copy) as conn:
        rows = conn.execute("SELECT state FROM stored_events ORDER BY rowid").fetchall()
    assert len(rows) > 20
    encoded_by_orjson = 0
    for (state,) in rows:
        payload = envelope.decode(bytes(state)).payload
        decoded = LIBRARY.decode(payload)
        assert OURS.encode(decoded) == payload
        encoded_by_orjson += plain(decoded)
    assert encoded_by_orjson > len(rows) // 2  # the fast path is the common one
