"""The game actions' front: a plain ASGI layer that answers a valid game action itself,
and hands every other request to FastAPI unchanged (issue 27). The players' live-table
commands (``api/tables.py``: ``POST /v1/sessions/{session_id}/tables/{table}/...``, each
queued on its table's intake) are served here the same way: a step's decisions arrive
as one burst of a thousand requests, each of which went through FastAPI's exception
layer and router matching after every game route before it.

A game action (``POST /v1/sessions/{session_id}/red-dog/bet`` and the others of
``api/game.py``) went, after the middleware, through Starlette's exception layer,
FastAPI's exit-stack layer, the routers' matching (each included router in turn), the
route's request wrapper and its handler (``api/fast_route.py``): about a third of the
event loop's CPU a request, none of it a check. The front sits just inside the
middleware (the request log, the HTTP metrics, the guard and the log position all see
the request as before) and, for a ``POST`` whose path is a game action's:

1. matches the path against the game routes' own patterns (``route.path_regex``);
2. validates every parameter once, with the route's own fields (FastAPI's ``ModelField``
   of each path parameter, the ``Idempotency-Key`` header and the body, each holding a
   pydantic ``TypeAdapter`` built once), the body parsed by orjson when its type is
   exactly ``application/json``: what ``api.fast_route.Plan`` takes as valid;
3. only when all of it is valid: the route's dependencies and endpoint in FastAPI's
   order (``Plan.run``: the token from the verified-token cache, the closed-session
   check handed to the command, the command awaited from the group-commit writer:
   ``api.writer``) and the endpoint's ``Response`` sent as is;
4. an exception from step 3 (a typed error: 401, 403, a game rule, the ledger's) is
   answered by the application's own exception handler for it, as Starlette's exception
   layer would; one without a handler propagates, as before (a bare 500).

Anything else (another method or path, a parameter step 2 refuses, a body that is not
JSON, ``fast_route.LEAN`` off, dependency overrides in tests) goes to FastAPI with the
same request (the body, if read, replayed): every refusal is FastAPI's own, byte for
byte, and nothing has run. ``scope`` carries the route, its endpoint and its path
parameters as FastAPI's routing leaves them, so the metrics and the request log name
the route as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import fast_route

JSON = b"application/json"
Handlers = Callable[[], dict[Any, Any]]


@dataclass(frozen=True)
class Action:
    """One game route: its path pattern and what its requests need (``Plan``)."""

    route: APIRoute
    pattern: re.Pattern[str]
    plan: fast_route.Plan
    path: tuple[tuple[str, Any], ...]  # (name, field) of each path parameter
    headers: tuple[tuple[bytes, str, Any], ...]  # (header name, field name, field)
    body: Any  # the body's field, or None


def actions(routes: list[Any]) -> list[Action]:
    """The routes the front serves: ``POST`` routes the lean handler plans, whose path
    parameters are plain strings and whose body is one field, not embedded."""
    out = []
    for route in routes:
        if not isinstance(route, APIRoute) or route.methods != {"POST"}:
            continue
        plan = fast_route.Plan.of(route)
        if plan is None or len(plan.body_fields) > 1 or plan.embed:
            continue
        if not all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
            continue
        if plan.body_fields and _embedded(plan.body_fields):
            continue
        if any("_" in f.alias for f in plan.header_fields):
            continue  # FastAPI's underscore conversion: not a game route's case
        path = tuple((f.alias, f) for f in plan.path_fields)
        headers = tuple((f.alias.lower().encode("latin-1"), f.name, f) for f in plan.header_fields)
        body = plan.body_fields[0] if plan.body_fields else None
        fast_route.PLANS.add(plan)  # its ``served`` counts with the lean handler's
        out.append(Action(route, route.path_regex, plan, path, headers, body))
    return out


def _embedded(fields: list[Any]) -> bool:
    from fastapi.dependencies.utils import _should_embed_body_fields

    return bool(_should_embed_body_fields(fields))


class Front:
    """ASGI middleware: the game actions' happy path (module docstring), else ``app``."""

    def __init__(
        self, app: ASGIApp, routes: list[Any], handlers: Handlers, overridden: Callable[[], bool]
    ) -> None:
        self.app = app
        self.actions = actions(routes)
        self.handlers = handlers
        self.overridden = overridden
        self.served = 0  # requests answered here (the tests look)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not fast_route.LEAN
            or scope.get("root_path")
        ):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        for action in self.actions:
            match = action.pattern.match(path)
            if match is not None:
                break
        else:
            await self.app(scope, receive, send)
            return
        if self.overridden():
            await self.app(scope, receive, send)
            return
        values, params, messages = await self._values(action, match, scope, receive)
        if values is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        await self._serve(action, params, values, scope, receive, send)

    async def _values(
        self, action: Action, match: re.Match[str], scope: Scope, receive: Receive
    ) -> tuple[dict[str, Any] | None, dict[str, str], list[Message]]:
        """Every parameter's value by field name (None: let FastAPI answer), the path
        parameters, and the body's messages as received."""
        values: dict[str, Any] = {}
        params = match.groupdict()
        messages: list[Message] = []
        for name, field in action.path:
            value, errors = field.validate(params[name], loc=("path", name))
            if errors:
                return None, params, messages
            values[field.name] = value
        if action.headers:
            raw_headers = scope["headers"]
            for header, name, field in action.headers:
                for key, raw in raw_headers:
                    if key == header:
                        value, errors = field.validate(raw.decode("latin-1"))
                        break
                else:
                    return None, params, messages
                if errors:
                    return None, params, messages
                values[name] = value
        body_field = action.body
        if body_field is None:
            return values, params, messages
        chunks = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return None, params, messages  # the client went away: FastAPI's case
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw_body = b"".join(chunks)
        body: Any = None
        if raw_body:
            if _content_type(scope) != JSON:
                return None, params, messages
            try:
                body = orjson.loads(raw_body)
            except orjson.JSONDecodeError:
                return None, params, messages
        value, errors = body_field.validate(body, loc=("body",))
        if errors:
            return None, params, messages
        values[body_field.name] = value
        return values, params, messages

    async def _serve(
        self,
        action: Action,
        params: dict[str, str],
        values: dict[str, Any],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        route = action.route
        # What FastAPI's routing leaves in the scope for the layers outside (the metrics'
        # and the request log's route, the error bodies' path ids).
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = params
        request = Request(scope, _body_read)
        action.plan.served += 1
        self.served += 1
        try:
            response = await action.plan.run(request, values)
            if not isinstance(response, Response):
                raise TypeError(f"{route.path}: a game action answers a Response")
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response.raw_headers,
            }
        )
        await send({"type": "http.response.body", "body": response.body})
        if response.background is not None:
            await response.background()

    def _handler(self, exc: Exception) -> Any:
        """The application's handler for ``exc``, as Starlette's exception layer finds it."""
        handlers = self.handlers()
        if isinstance(exc, HTTPException) and exc.status_code != 500:
            found = handlers.get(exc.status_code)
            if found is not None:
                return found
        for cls in type(exc).__mro__:
            if cls is Exception:
                break  # the server-error handler's: a bare 500, outside
            if cls in handlers:
                return handlers[cls]
        return None


def _content_type(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bytes(value)
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` with the messages already taken given back first."""
    if not messages:
        return receive
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def _body_read() -> Message:
    """The request's ``receive`` once its body was read: only a disconnect is left."""
    return {"type": "http.disconnect"}
