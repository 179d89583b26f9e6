"""One way into a reply for every HTTP route: a route maps its wire format onto a ``SpeechRequest``
and ``open_reply`` checks it once (the text, its length, the settings, whether the voice can read
it), waits for admission and speaks it, so every route answers a fault with the same error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from starlette.requests import Request

from speakstream.engine.base import check_text
from speakstream.errors import InvalidInput
from speakstream.protocol import Options
from speakstream.server.reading import ReplySettings, check_readable, readable, speaker_info
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


@dataclass(frozen=True, slots=True)
class Turn:
    """One speaker's text in a dialogue."""

    text: str
    voice: str


async def open_dialogue(runtime: Runtime, request: Request, turns: Sequence[Turn], speech: SpeechRequest) -> Reply:
    """A reply of several speakers, each turn read by its own voice (in its own language) after
    ``turn_pause_s`` of silence; ``speech`` carries the options (its text is unused). The client's
    text is the turns' texts joined by a space, so characters index into it."""
    limit, most = runtime.config.max_text_chars, runtime.config.max_turns
    if not turns or len(turns) > most:
        raise InvalidInput(f"a dialogue has 1 to {most} turns, not {len(turns)}", code="invalid_dialogue")
    texts = [check_text(turn.text) for turn in turns]
    if sum(map(len, texts)) > limit:
        raise InvalidInput(f"the dialogue's text is over the {limit}-character limit", code="text_too_long")
    options = replace(speech.options, voice=turns[0].voice, text_type="text")
    settings = runtime.settings(options, bitrate=speech.bitrate)
    scheduler = runtime.require_scheduler()
    for i, turn in enumerate(turns):
        readable(speaker_info(scheduler, settings, turn.voice if i else None).speaks, turn.text)
    reply = await _admitted(runtime, _reply(runtime, request, speech, settings), speech.route)
    with _released_on_error(reply):
        for i, turn in enumerate(turns):
            if i:
                reply.speak_as(turn.voice, runtime.config.turn_pause_s)
            await reply.apush(" " + turn.text if i else turn.text)
        reply.end_input()
    return reply


async def open_reply(runtime: Runtime, request: Request, speech: SpeechRequest) -> Reply:
    """``speech``'s reply, its text queued and admitted at the scheduler; a ``SpeakstreamError``
    says what is wrong before any audio."""
    text = check_text(speech.text)
    limit = runtime.config.max_text_chars
    if len(text) > limit:
        raise InvalidInput(f"text is over the {limit}-character limit", code="text_too_long")
    settings = runtime.settings(speech.options, bitrate=speech.bitrate)
    check_readable(settings, text)
    reply = await _admitted(runtime, _reply(runtime, request, speech, settings), speech.route)
    with _released_on_error(reply):
        await reply.speak(text)
    return reply


def _reply(runtime: Runtime, request: Request, speech: SpeechRequest, settings: ReplySettings) -> Reply:
    session_id, client = runtime.new_id(speech.route), client_of(request.scope)
    return runtime.reply(session_id, speech.request_id, settings, client, route=speech.route, headers=request.headers)


async def _admitted(runtime: Runtime, reply: Reply, route: str) -> Reply:
    """``reply`` admitted, before its text is read: a refusal costs the server no chunking."""
    await reply.admitted()
    runtime.metrics.requests.labels(route).inc()
    return reply


@contextlib.contextmanager
def _released_on_error(reply: Reply) -> Iterator[None]:
    """The room ``reply`` holds given back when its text cannot be queued."""
    try:
        yield
    except BaseException:
        reply.release()
        raise
