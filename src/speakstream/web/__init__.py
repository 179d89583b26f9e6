"""The web page served at ``/``."""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"


def web_routes() -> list[BaseRoute]:
    async def index(_: object) -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    return [Route("/", index), Mount("/static", StaticFiles(directory=STATIC), name="static")]
