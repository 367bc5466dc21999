"""The lean path's bearer scheme (``api.fast_route._lean_bearer``) answers as FastAPI's
``HTTPBearer`` does: the same credentials, the same refusal, for any header."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException
from starlette.requests import Request

from api.fast_route import _lean_bearer

HEADERS = [
    None,
    "",
    "Bearer abc",
    "bearer abc",
    "BEARER  abc  ",
    "Bearer",
    "Bearer ",
    "Basic abc",
    "abc",
    " Bearer abc",
]


def _request(value: str | None) -> Request:
    headers = [] if value is None else [(b"authorization", value.encode())]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers})


def _outcome(call: Any, value: str | None) -> Any:
    try:
        got = asyncio.run(call(_request(value)))
    except HTTPException as e:
        return ("refused", e.status_code, e.detail, e.headers)
    return None if got is None else ("ok", type(got), got.scheme, got.credentials)


@pytest.mark.parametrize("auto_error", [True, False])
@pytest.mark.parametrize("value", HEADERS)
def test_the_same_answer_as_fastapis_scheme(value: str | None, auto_error: bool) -> None:
    scheme = HTTPBearer(auto_error=auto_error)
    assert _outcome(_lean_bearer(scheme), value) == _outcome(scheme, value)


def test_one_call_per_scheme() -> None:
    scheme = HTTPBearer()
    assert _lean_bearer(scheme) is _lean_bearer(scheme)
    assert _lean_bearer(HTTPBearer()) is not _lean_bearer(scheme)
