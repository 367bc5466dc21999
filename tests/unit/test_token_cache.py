"""Verified session and spectator tokens are remembered (``Credentials._known``): the
guard and the route identify each request's token once each, so the second costs a
look-up; a remembered token still expires on the clock, and nothing unverified is kept."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from api import auth
from api.auth import Credentials, Role


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _credentials(clock: Clock, secret: bytes = b"s" * 32) -> Credentials:
    return Credentials("op-token", "aud-token", secret, "test", "test", 60, clock=clock)


def test_a_remembered_token_still_expires_and_a_forged_one_is_never_kept() -> None:
    clock = Clock()
    creds = _credentials(clock)
    sid = str(uuid.uuid4())
    token = creds.session_token(sid)
    first = creds.identify(token)
    assert first is not None and first.role is Role.SESSION and first.session_id == sid
    assert token in creds._known
    assert creds.identify(token) == first  # remembered
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert creds.identify(forged) is None
    assert forged not in creds._known
    clock.now += 61  # past the 60 s of the token
    assert creds.identify(token) is None
    watch, _ = creds.spectator_token("ibj-1", 1)
    spectator = creds.identify(watch)
    assert spectator is not None and spectator.role is Role.SPECTATOR
    assert creds.identify(watch) == spectator
    clock.now += 61
    assert creds.identify(watch) is None
    assert creds.identify("op-token") is not None and "op-token" not in creds._known


def test_another_secret_remembers_nothing_of_the_first() -> None:
    clock = Clock()
    creds = _credentials(clock)
    token = creds.session_token(str(uuid.uuid4()))
    assert creds.identify(token) is not None
    other = dataclasses.replace(creds, secret=b"t" * 32)
    assert other.identify(token) is None


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    creds = _credentials(clock)
    monkeypatch.setattr(auth, "KNOWN_TOKENS", 3)
    for _ in range(10):
        assert creds.identify(creds.session_token(str(uuid.uuid4()))) is not None
        assert len(creds._known) <= 3
