"""The event store's cache of event hashes (``VerifyingMapper``) keys a row by its
aggregate's id and version in a form the garbage collector stops scanning: a UUID by its
integer. A key holding a UUID object was scanned by every collection it lived through,
and the cache's entries were most of what a server's young collections found alive."""

from __future__ import annotations

import gc
import uuid

from ledger.store import row_key
from tests.conftest import Store
from tests.integration.test_group_commit import funded


def test_a_uuid_and_its_text_stay_two_keys_and_versions_stay_apart() -> None:
    u = uuid.uuid4()
    assert row_key(u, 1) == row_key(uuid.UUID(str(u)), 1)
    assert row_key(u, 1) != row_key(str(u), 1)  # as before: a UUID is not its text
    assert row_key(u, 1) != row_key(u, 2)
    assert row_key(u, 1) != row_key(uuid.uuid4(), 1)


def test_the_cache_holds_nothing_the_collector_keeps_scanning(store: Store) -> None:
    app = store.open()
    funded(app, "ann")
    for k in range(5):
        app.deposit(f"d{k}", "ann", 10)
    known, _ = app.mapper._cache()
    assert len(known) > 5
    gc.collect()  # a tuple of ints, strs and bytes is untracked once a collection sees it
    tracked = [key for key, entry in known.items() if gc.is_tracked(key) or gc.is_tracked(entry)]
    assert tracked == []
    # and the cache still answers: a row read back is known by its id and version
    number, version = next(key for key in known if isinstance(key[0], int))
    assert isinstance(number, int)
    assert app.mapper.known_hash(uuid.UUID(int=number), version) is not None
