"""``/play``: the reference game client (issue 24), static files shipped in the package.

Plain HTML, CSS and JavaScript modules in ``api/static/play`` (no framework, no build
step, nothing from a CDN). The page is served from croupier's own origin, so it needs no
CORS; it takes the session token (or a spectator token) from the launch URL's fragment
(``/play/#token=...&table=ibj-1``; a fragment never reaches a server's logs) and makes
only the API calls an operator's client would make (docs: the game-client guide).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from api.errors import ApiError

CLIENT = Path(__file__).with_name("static") / "play"
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}\.(html|js|css)$")
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    # Only this origin's scripts, styles and API; no inline script, no frames.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
}

router = APIRouter(include_in_schema=False)


@router.get("/play")
def play_root() -> Any:
    return RedirectResponse("/play/", status_code=307)


@router.get("/play/")
def play_page() -> FileResponse:
    return _file("index.html")


@router.get("/play/{name}")
def play_file(name: str) -> FileResponse:
    return _file(name)


def _file(name: str) -> FileResponse:
    path = CLIENT / name
    if not NAME.match(name) or not path.is_file():
        raise ApiError(404, "not-found", f"no client file {name!r}")
    return FileResponse(path, media_type=TYPES[path.suffix], headers=HEADERS)
