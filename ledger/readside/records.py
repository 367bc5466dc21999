"""A commit's events as the projectors read them, built from the domain events the writer
holds: the payload the log holds, without encoding or decoding JSON.

The log holds each event's payload as the eventsourcing transcoder wrote it (the event's
attributes but its originator id and version, and its ``class_version`` when above 1,
JSON-encoded with the transcoder's custom types as ``{"_type_": name, "_data_": data}``);
the runner decodes it (:meth:`ledger.readside.projection.Source.open`). At commit the
writer has just encoded those attributes: :func:`payload` builds the object decoding
them gives back, from the attributes themselves. Plain values (``str``, ``int``,
``bool``, ``None``, dicts with text keys, lists, tuples) are what JSON gives back already
(a tuple as a list); a value of a transcoder type becomes its ``{"_type_", "_data_"}``
object; anything else (a ``str`` or ``int`` subclass, a float, a dict with other keys)
goes through the transcoder's JSON and back, so the payload is what the log holds by
construction. ``tests/integration/test_read_side_commits.py`` holds the two equal on a
played log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any
from uuid import UUID

from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, StoredEvent, UUIDAsHex

from ledger.readside.projection import Event, Projector

_PLAIN = frozenset({str, int, bool, type(None)})
_TEXT = frozenset({str})
_JSON_NATIVE = (str, int, float, list, tuple, dict)


def payload_of(transcoder: JSONTranscoder) -> Callable[[Any], Mapping[str, Any]]:
    """The function that makes a domain event's payload as the log holds it, decoded:
    a :class:`Payload` over the event's attributes."""
    encoder, types = transcoder.encoder, transcoder.types
    # The library's datetime and UUID transcodings (every event's timestamp, most ids)
    # encoded by their own C methods, without the transcoding's frame: the same text.
    direct: dict[type, tuple[str, Callable[[Any], str]]] = {}
    for kind, transcoding in types.items():
        if type(transcoding) is DatetimeAsISO and kind is datetime:
            direct[kind] = (transcoding.name, datetime.isoformat)
        elif type(transcoding) is UUIDAsHex and kind is UUID:
            direct[kind] = (transcoding.name, attrgetter("hex"))

    def roundtrip(value: Any) -> Any:
        return json.loads(encoder.encode(value))

    def plain(value: Any) -> Any:
        kind = type(value)
        if kind in _PLAIN:
            return value
        fast = direct.get(kind)
        if fast is not None:
            return {"_type_": fast[0], "_data_": fast[1](value)}
        if kind is dict:
            if _TEXT.issuperset(map(type, value)) and _PLAIN.issuperset(
                map(type, value.values())
            ):  # C loops: most of an event's dicts hold only text and numbers
                return dict(value)
            out = {}
            for k, v in value.items():
                if type(k) is not str:
                    return roundtrip(value)
                out[k] = v if type(v) in _PLAIN else plain(v)
            return out
        if kind is list or kind is tuple:
            if _PLAIN.issuperset(map(type, value)):
                return list(value)
            return [plain(v) for v in value]
        transcoding = types.get(kind)
        if transcoding is not None and not isinstance(value, _JSON_NATIVE):
            return {"_type_": transcoding.name, "_data_": plain(transcoding.encode(value))}
        return roundtrip(value)

    def payload(event: Any) -> Payload:
        return Payload(vars(event), getattr(type(event), "class_version", 1), plain)

    return payload


class Payload(Mapping[str, Any]):
    """A domain event's payload as the log holds it, decoded, built field by field as the
    projectors read it (they read a few fields of each event: the rest is never built)."""

    __slots__ = ("_attrs", "_built", "_plain", "_version")

    def __init__(self, attrs: dict[str, Any], version: int, plain: Callable[[Any], Any]):
        self._attrs = attrs
        self._version = version
        self._plain = plain
        self._built: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        # No exception for a field the event does not have: the projectors ask for
        # several that most events lack (``round_code``, ``game_code``, ``round_id``).
        built = self._built
        value = built.get(key, _MISSING)
        if value is not _MISSING:
            return value
        attrs = self._attrs
        if key in attrs:
            if key in _NOT_IN_PAYLOAD:
                return default
            value = attrs[key]
            if type(value) not in _PLAIN:
                value = self._plain(value)
            built[key] = value
            return value
        if key == "class_version" and self._version > 1:
            return self._version
        return default

    def __contains__(self, key: object) -> bool:
        if key in self._attrs:
            return key not in _NOT_IN_PAYLOAD
        return key == "class_version" and self._version > 1

    def __iter__(self) -> Iterator[str]:
        for key in self._attrs:
            if key not in _NOT_IN_PAYLOAD:
                yield key
        if self._version > 1 and "class_version" not in self._attrs:
            yield "class_version"

    def __len__(self) -> int:
        return sum(1 for _ in self)


_NOT_IN_PAYLOAD = frozenset({"originator_id", "originator_version"})
_MISSING: Any = object()


def records(
    projectors: Sequence[Projector],
    stored: Sequence[StoredEvent],
    ids: Sequence[int],
    events: Sequence[Any],
    payload: Callable[[Any], Mapping[str, Any]],
    asks: dict[str, tuple[Projector, ...] | None] | None = None,
) -> list[Event]:
    """The events of one insert that any of ``projectors`` takes (asked of the domain
    event's attributes: an event none takes is not turned into a payload). ``asks``
    keeps, per topic, who must be asked, across inserts to the same ``projectors``."""
    out = []
    if asks is None:
        asks = {}
    for s, n, event in zip(stored, ids, events, strict=True):
        topic = s.topic
        ask = asks.get(topic, _MISSING)
        if ask is _MISSING:
            ask = asks[topic] = _asked(projectors, topic)
        if ask is not None:  # None: taken whatever its fields
            attrs = vars(event)
            for p in ask:
                if p.takes(topic, attrs):
                    break
            else:
                continue
        out.append(Event(n, str(s.originator_id), topic, payload(event)))
    return out


def _asked(projectors: Sequence[Projector], topic: str) -> tuple[Projector, ...] | None:
    """None if a projector takes every event of ``topic``; else the projectors whose
    answer depends on the event's fields (none: no event of it is taken)."""
    verdicts = [(p, p.takes_topic(topic)) for p in projectors]
    if any(v is True for _, v in verdicts):
        return None
    return tuple(p for p, v in verdicts if v is None)
