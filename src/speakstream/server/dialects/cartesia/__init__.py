"""Cartesia's APIs: text to speech over WebSocket and HTTP (``tts``), voices (``voices``) and
pronunciation dictionaries (``dictionaries``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from speakstream.server.dialects.cartesia import dictionaries, tts, voices


def routes() -> list[BaseRoute]:
    return [*dictionaries.routes(), *voices.routes(), *tts.routes()]
