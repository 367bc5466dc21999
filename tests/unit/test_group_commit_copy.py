"""The copy a batch takes of a cached aggregate (ledger.group_commit.fresh_copy): nothing
the batch changes may reach the cached original, whatever the change."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from eventsourcing.domain import Aggregate, event

from ledger.group_commit import fresh_copy


class Box(Aggregate):
    @event("Made")
    def __init__(self, owner: Any) -> None:
        self.owner = owner
        self.at = datetime(2026, 12, 1, tzinfo=UTC)
        self.items: list[Any] = [["a", 1], {"k": [2]}]
        self.alias = self.items[0]
        self.tags = {"x", "y"}
        self.frozen = ("s", 1)
        self.nested = (["mutable"],)

    @event("Put")
    def put(self, item: Any) -> None:
        self.items.append(item)  # in place, on purpose: the copy must still be apart


def made() -> Box:
    box = Box(owner=uuid4())
    box.collect_events()
    return box


def test_the_copy_has_the_same_state_as_deepcopy() -> None:
    box = made()
    ours, theirs = fresh_copy(box), copy.deepcopy(box)
    assert type(ours) is Box
    assert vars(ours) == vars(theirs)
    assert ours.id == box.id and ours.version == box.version


def test_no_change_to_the_copy_reaches_the_original() -> None:
    box = made()
    before = copy.deepcopy(vars(box))
    c = fresh_copy(box)
    c.put(item="new")
    c.items[0].append("more")
    c.items[1]["k"].append(3)
    c.tags.add("z")
    c.nested[0].append("changed")
    assert vars(box) == before
    assert box.version == 1 and not box.collect_events()
    assert c.version == 2 and len(c.collect_events()) == 1


def test_aliases_stay_aliases_and_immutables_are_shared() -> None:
    box = made()
    c = fresh_copy(box)
    assert c.alias is c.items[0] and c.alias is not box.alias
    assert c.owner is box.owner and c.at is box.at and c.frozen is box.frozen
    assert c.nested is not box.nested and c.nested[0] is not box.nested[0]


class FakeCasino:
    """What a BatchView reads: a cache, a store that knows which ids have newer events."""

    def __init__(self, *cached: Aggregate) -> None:
        self.cache = {a.id: a for a in cached}
        self.newer: set[Any] = set()
        self.recorder = self

    def cached(self, aggregate_id: Any) -> Aggregate | None:
        return self.cache.get(aggregate_id)

    def find(self, cls: type[Any], aggregate_id: Any) -> Any:
        return None

    def any_newer(self, pairs: list[tuple[Any, int]]) -> bool:
        return any(a in self.newer for a, _ in pairs)


def test_a_read_only_load_lends_the_cached_object_and_a_change_gets_a_copy() -> None:
    from ledger.group_commit import BatchView

    box = made()
    app = FakeCasino(box)
    view = BatchView(app)  # type: ignore[arg-type]
    assert view.read(Box, box.id) is box  # read only: not copied
    assert view.read(Box, box.id) is box
    mine = view.find(Box, box.id)  # to change: the batch's own copy of what it read
    assert mine is not box and mine.version == box.version
    mine.put("z")
    assert box.items == [["a", 1], {"k": [2]}]  # the cache's object never changes
    assert view.read(Box, box.id) is mine  # the batch now reads what it changed
    assert view.read(Box, uuid4()) is None


def test_an_aggregate_only_read_is_checked_for_newer_events_in_the_store() -> None:
    from ledger.group_commit import BatchView

    read_only, changed = made(), made()
    app = FakeCasino(read_only, changed)
    view = BatchView(app)  # type: ignore[arg-type]
    view.read(Box, read_only.id)
    view.find(Box, changed.id).put("z")
    assert not view.stale()
    app.newer = {changed.id}  # a changed aggregate collides at insert, not here
    assert not view.stale()
    app.newer = {read_only.id}  # another process wrote what this batch decided on
    assert view.stale()
