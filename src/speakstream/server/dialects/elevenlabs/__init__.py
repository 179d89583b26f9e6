"""ElevenLabs' APIs: text to speech over WebSocket and HTTP (``tts``), voices (``voices``),
text to dialogue (``dialogue``) and pronunciation dictionaries (``dictionaries``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from speakstream.server.dialects.elevenlabs import dialogue, dictionaries, tts, voices


def routes() -> list[BaseRoute]:
    return [*voices.routes(), *dialogue.routes(), *tts.routes(), *dictionaries.routes()]
