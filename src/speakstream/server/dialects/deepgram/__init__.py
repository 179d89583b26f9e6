"""Deepgram's text-to-speech API over WebSocket and HTTP (``tts``), its voice names read by Kokoro
voices (``voices``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from speakstream.server.dialects.deepgram import tts


def routes() -> list[BaseRoute]:
    return tts.routes()
