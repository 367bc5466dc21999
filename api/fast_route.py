"""A lean request handler for the hot routes (issue 27): the game actions' happy path
without FastAPI's general dependency solver, with the same outcome.

FastAPI's handler (``fastapi.routing.get_request_handler``) re-derives, on every request,
what a route needs: it walks the dependency tree (a ``Response`` object, a cache key, a
``typing`` alias and a ``QueryParams`` parse per level), parses the ``Content-Type``
header with ``email.message``, and builds the endpoint's context for error messages. On a
game action that was a sixth of the server's CPU per round, more than the command's
engine and signatures together (docs/performance/request-path.md).

:class:`FastRoute` plans a route once, when its handler is built: which path and header
parameters, which body field, which dependencies in which order. A request then runs

1. every parameter's validation, with FastAPI's own functions (``request_params_to_args``,
   ``request_body_to_args``) on the path parameters, the headers and the body parsed by
   orjson when its type is exactly ``application/json``;
2. only if all of it is valid: the dependencies, in FastAPI's order (each cached per
   request as FastAPI caches it), then the endpoint (a sync one in a worker thread, as
   FastAPI runs it); the endpoint's ``Response`` is sent as is, anything else through
   FastAPI's own ``serialize_response``.

Anything else, an invalid parameter, another body type, JSON orjson refuses, dependency
overrides (tests), is handed to FastAPI's handler with the same request (its body already
read and cached): the error is FastAPI's own, byte for byte. Nothing in step 1 has an
effect, and a dependency runs only in step 2, in the order and with the arguments FastAPI
would give it, so what it raises (a 401, a 403) is what FastAPI's handler would raise.

A route qualifies when every dependency is a plain function or ``async`` callable (no
``yield``, no scopes, no concurrency limit) and it takes no query, cookie or form
parameter and no ``Response`` or ``BackgroundTasks``; any other route keeps FastAPI's
handler unchanged. Exceptions take the same path as before (the route's
``request_response`` wrapper and the app's exception handlers).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import params
from fastapi import routing as fastapi_routing
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args, request_params_to_args
from fastapi.routing import APIRoute, serialize_response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from fastapi.utils import is_body_allowed_for_status_code
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
JSON = b"application/json"
LEAN = True
"""False: every request takes FastAPI's handler (the tests compare both answers)."""
PLANS: weakref.WeakSet[Plan] = weakref.WeakSet()
"""Every plan made (its ``served`` count: the tests check the lean path is taken)."""
"""False: every request takes FastAPI's handler (the tests compare both answers)."""


def _is_async(call: Any) -> bool:
    if inspect.isroutine(call):
        return inspect.iscoroutinefunction(call)
    return inspect.iscoroutinefunction(getattr(call, "__call__", None))  # noqa: B004


def _is_generator(call: Any) -> bool:
    target = call if inspect.isroutine(call) else getattr(call, "__call__", None)  # noqa: B004
    return inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target)


@dataclass(frozen=True)
class Step:
    """One dependant (a dependency, or the endpoint last): its call and its arguments."""

    dependant: Dependant
    call: Callable[..., Any]
    is_async: bool
    subs: tuple[tuple[str | None, Step], ...]


def _plan(dependant: Dependant) -> Step | None:
    """The dependant's step, or None if it needs what only FastAPI's solver does."""
    d = dependant
    if (
        d.call is None
        or d.query_params
        or d.cookie_params
        or d.websocket_param_name
        or d.response_param_name
        or d.background_tasks_param_name
        or d.security_scopes_param_name
        or d.own_oauth_scopes
        or d.parent_oauth_scopes
        or d.concurrency is not None
        or _is_generator(d.call)
    ):
        return None
    subs = []
    for sub in d.dependencies:
        step = _plan(sub)
        if step is None:
            return None
        subs.append((sub.name, step))
    if type(d.call) is HTTPBearer:
        return Step(d, _lean_bearer(d.call), True, tuple(subs))
    return Step(d, d.call, _is_async(d.call), tuple(subs))


_BEARERS: dict[int, Callable[..., Any]] = {}


def _lean_bearer(scheme: HTTPBearer) -> Callable[..., Any]:
    """``scheme``'s call (FastAPI's ``HTTPBearer.__call__``) with the credentials built
    without validating them again: the scheme and the token are the header's own
    strings, and pydantic's validation of those two strings was most of the call's
    CPU. Anything the scheme refuses goes to the scheme itself, for its own error.
    One call per scheme, so the dependency cache treats it as FastAPI does."""
    lean = _BEARERS.get(id(scheme))
    if lean is not None:
        return lean

    async def bearer(request: Request) -> HTTPAuthorizationCredentials | None:
        authorization = request.headers.get("Authorization")
        kind, credentials = get_authorization_scheme_param(authorization)
        if not (authorization and kind and credentials) or kind.lower() != "bearer":
            return await scheme(request)  # its refusal, or None where it makes none
        return HTTPAuthorizationCredentials.model_construct(scheme=kind, credentials=credentials)

    _BEARERS[id(scheme)] = bearer
    weakref.finalize(scheme, _BEARERS.pop, id(scheme), None)
    return bearer


def _walk(step: Step) -> list[Dependant]:
    """Every dependant of ``step``, sub-dependencies first (FastAPI's order)."""
    out: list[Dependant] = []
    for _, sub in step.subs:
        out += _walk(sub)
    out.append(step.dependant)
    return out


class Plan:
    """What a route's requests need, worked out once."""

    def __init__(self, route: Any, root: Step) -> None:
        self.root = root
        dependants = _walk(root)
        self.path_fields = [f for d in dependants for f in d.path_params]
        self.header_fields = [f for d in dependants for f in d.header_params]
        self.body_fields = list(root.dependant.body_params)
        if any(d.body_params for d in dependants if d is not root.dependant):
            raise ValueError("a dependency reads the body")
        self.embed = bool(getattr(route, "_embed_body_fields", False))
        self.body_field = route.body_field
        self.route = route
        self.served = 0  # requests answered on the lean path (the tests look)

    @classmethod
    def of(cls, route: Any) -> Plan | None:
        body_field = route.body_field
        if body_field is not None and isinstance(body_field.field_info, params.Form):
            return None
        root = _plan(route.dependant)
        if root is None:
            return None
        try:
            return cls(route, root)
        except ValueError:
            return None

    async def values(self, request: Request) -> dict[str, Any] | None:
        """Every parameter's value by field name, or None: let FastAPI answer."""
        values: dict[str, Any] = {}
        if self.path_fields:
            got, errors = request_params_to_args(self.path_fields, request.path_params)
            if errors:
                return None
            values.update(got)
        if self.header_fields:
            got, errors = request_params_to_args(self.header_fields, request.headers)
            if errors:
                return None
            values.update(got)
        if self.body_fields:
            raw = await request.body()
            body: Any = None
            if raw:
                if _content_type(request) != JSON:
                    return None
                try:
                    body = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    return None
            got, errors = await request_body_to_args(self.body_fields, body, self.embed)
            if errors:
                return None
            values.update(got)
        return values

    async def run(self, request: Request, values: dict[str, Any]) -> Any:
        cache: dict[Any, Any] = {}
        return await self._call(self.root, request, values, cache)

    async def _call(
        self, step: Step, request: Request, values: dict[str, Any], cache: dict[Any, Any]
    ) -> Any:
        d = step.dependant
        kwargs: dict[str, Any] = {}
        for name, sub in step.subs:
            if sub.dependant.use_cache and sub.call in cache:
                solved = cache[sub.call]
            else:
                solved = await self._call(sub, request, values, cache)
                cache.setdefault(sub.call, solved)
            if name is not None:
                kwargs[name] = solved
        for f in (*d.path_params, *d.header_params, *d.body_params):
            kwargs[f.name] = values[f.name]
        if d.request_param_name:
            kwargs[d.request_param_name] = request
        if d.http_connection_param_name:
            kwargs[d.http_connection_param_name] = request
        if step.is_async:
            return await step.call(**kwargs)
        return await run_in_threadpool(step.call, **kwargs)


def _content_type(request: Request) -> bytes | None:
    for name, value in request.scope["headers"]:
        if name == b"content-type":
            return bytes(value)
    return None


def fast_handler(route: Any, slow: Handler) -> Handler:
    """``route``'s handler: the lean path where :class:`Plan` allows it, else ``slow``."""
    plan = Plan.of(route)
    response_class = route.response_class
    if plan is None or not isinstance(response_class, DefaultPlaceholder):
        return slow
    answer_class = response_class.value
    dump_json = route.response_field is not None
    overrides = getattr(route, "dependency_overrides_provider", None)
    serialize_args = {
        "field": route.response_field,
        "include": route.response_model_include,
        "exclude": route.response_model_exclude,
        "by_alias": route.response_model_by_alias,
        "exclude_unset": route.response_model_exclude_unset,
        "exclude_defaults": route.response_model_exclude_defaults,
        "exclude_none": route.response_model_exclude_none,
    }
    status_code = route.status_code

    PLANS.add(plan)

    async def handler(request: Request) -> Response:
        if not LEAN or (overrides is not None and getattr(overrides, "dependency_overrides", None)):
            return await slow(request)
        values = await plan.values(request)
        if values is None:
            return await slow(request)
        plan.served += 1
        raw = await plan.run(request, values)
        if isinstance(raw, Response):
            return raw
        # Not the game routes' case (they answer a Response): FastAPI's serialization.
        content = await serialize_response(
            response_content=raw,
            is_coroutine=plan.root.is_async,
            dump_json=dump_json,
            **serialize_args,
        )
        extra = {} if status_code is None else {"status_code": status_code}
        if dump_json:
            answer = Response(content, media_type="application/json", **extra)
        else:
            answer = answer_class(content, **extra)
        if not is_body_allowed_for_status_code(answer.status_code):
            answer.body = b""
        return answer

    return handler


class FastRoute(APIRoute):
    """An ``APIRoute`` whose handler takes the lean path (module docstring) when it can.
    Use as a router's ``route_class``; the OpenAPI document is the same."""

    def get_route_handler(self) -> Handler:
        slow = super().get_route_handler()
        # Included in an application, FastAPI builds the handler for the route as the
        # inclusion sees it (its effective dependant, response class, overrides).
        current = getattr(fastapi_routing, "_effective_route_context_var", None)
        context = current.get() if current is not None else None
        route: Any = self
        if context is not None and getattr(context, "original_route", None) is self:
            route = context
        try:
            return fast_handler(route, slow)
        except AttributeError:  # a FastAPI whose routes look otherwise: its own handler
            return slow
