"""``ledger.ids.uuid5`` is the standard library's ``uuid.uuid5``, value for value."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from ledger import ids
from ledger.requests import NAMESPACE


@given(st.text(), st.sampled_from([NAMESPACE, uuid.NAMESPACE_URL, uuid.NAMESPACE_DNS]))
def test_the_same_uuid_as_the_standard_librarys(name: str, namespace: uuid.UUID) -> None:
    ours, theirs = ids.uuid5(namespace, name), uuid.uuid5(namespace, name)
    assert ours == theirs
    assert (ours.version, ours.variant, ours.is_safe) == (5, uuid.RFC_4122, theirs.is_safe)
    assert hash(ours) == hash(theirs) and str(ours) == str(theirs)


def test_surrogates_are_refused_as_the_standard_library_refuses_them() -> None:
    for f in (ids.uuid5, uuid.uuid5):
        try:
            f(NAMESPACE, "\ud800")
        except UnicodeEncodeError:
            continue
        raise AssertionError(f"{f} encoded a lone surrogate")
