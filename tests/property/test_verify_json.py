"""verify's fast JSON reading gives the fields it checks exactly as ``json.loads`` gives them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit_cli.chunk import FIELDS as _FIELDS
from audit_cli.chunk import extract as _extract


def reference(payload: bytes) -> dict[str, Any]:
    doc = json.loads(payload)
    return {k: doc[k] for k in _FIELDS if k in doc}


def outcome(read: Any, payload: bytes) -> Any:
    try:
        return read(payload)
    except (ValueError, TypeError) as e:
        return ("refused", isinstance(e, ValueError))


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b or (a != a and b != b))


fields = st.dictionaries(st.sampled_from([*_FIELDS, "other"]), values, max_size=5)


@given(fields | values, st.sampled_from([None, 1, 2]))
def test_any_json_document_reads_as_the_standard_library_reads_it(value: Any, indent: Any) -> None:
    payload = json.dumps(value, indent=indent).encode()
    assert _same(outcome(_extract, payload), outcome(reference, payload))


@pytest.mark.parametrize(
    "payload",
    [
        b'{"balance": 18446744073709551616}',  # beyond 64 bits: orjson would give a float
        b'{"movement": {"amount": -9223372036854775809}}',
        b'{"movement": [1, {"x": 99999999999999999999999}]}',
        b'{"other": 18446744073709551616, "balance": 1}',
        b"18446744073709551616",
        b" -18446744073709551616",
        b"[1e400]",
        b'{"balance": NaN}',
        b'{"balance": 1.5}',
        b'["movement"]',
        b'"movement"',
        b'{"a": 1, "a": 2}',
        b'"\\ud800"',
        b'{"digest": "0000000000000000000000000000000000000000000000000000000000000001"}',
        b" {} ",
    ],
)
def test_edge_payloads_read_as_the_standard_library_reads_them(payload: bytes) -> None:
    assert _same(outcome(_extract, payload), outcome(reference, payload))


@pytest.mark.parametrize("payload", [b"{", b"\xff\xfe", b'{"a": }', b""])
def test_what_the_standard_library_refuses_is_refused(payload: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(payload)
    with pytest.raises(ValueError):
        _extract(payload)
