"""One way into a reply for every HTTP route: a route maps its wire format onto a ``SpeechRequest``
and ``open_reply`` checks it once (the text, its length, the settings, whether the voice can read
it), speaks it and waits for admission, so every route answers a fault with the same error."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from speakstream.engine.base import check_text
from speakstream.errors import InvalidInput
from speakstream.protocol import Options
from speakstream.server.reading import check_readable
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.security import client_of


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """What an HTTP request asks to hear, in our terms."""

    text: object
    """The text as the wire carried it: checked here (a string with something to say)."""
    options: Options
    route: str
    """The route's name: its replies' id prefix, trace name and metrics label."""
    request_id: str | None = None
    bitrate: int | None = None
    """An encoder bitrate the wire format names (ElevenLabs' ``mp3_44100_128``)."""


def body_limit(runtime: Runtime) -> int:
    """The largest body a route reads: the longest text at four bytes a character, and room for
    the rest."""
    return runtime.config.max_text_chars * 4 + 4096


async def open_reply(runtime: Runtime, request: Request, speech: SpeechRequest) -> Reply:
    """``speech``'s reply, its text queued and admitted at the scheduler; a ``SpeakstreamError``
    says what is wrong before any audio."""
    text = check_text(speech.text)
    limit = runtime.config.max_text_chars
    if len(text) > limit:
        raise InvalidInput(f"text is over the {limit}-character limit", code="text_too_long")
    settings = runtime.settings(speech.options, bitrate=speech.bitrate)
    check_readable(runtime.require_scheduler(), settings, text)
    session_id, client = runtime.new_id(speech.route), client_of(request.scope)
    reply = runtime.reply(session_id, speech.request_id, settings, client, route=speech.route, headers=request.headers)
    await reply.speak(text)
    await reply.admitted()
    runtime.metrics.requests.labels(speech.route).inc()
    return reply
