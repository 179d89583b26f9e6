"""Client-side measurement of requests over a speech session."""

from __future__ import annotations

import time
from typing import Any

from speakstream.bench.player import Playback, pcm_arrivals, play
from speakstream.channel import Channel, SpeechResult


async def speak_timed(session: Channel, text: str, **options: Any) -> tuple[SpeechResult, Playback]:
    """Send one text message; wait for it to finish; the result and what a player heard."""
    sent_at = time.perf_counter()
    request_id = await session.speak(text, **options)
    result = await session.collect(request_id, sent_at=sent_at)
    return result, play(pcm_arrivals(result.audio_times), sent_at)


async def speak_many_timed(session: Channel, texts: list[str], **options: Any) -> tuple[list[SpeechResult], Playback]:
    """Send several text messages at once (one reply in pieces); played back as one reply."""
    sent_at = time.perf_counter()
    ids = [await session.speak(text, **options) for text in texts]
    results = [await session.collect(request_id, sent_at=sent_at) for request_id in ids]
    arrivals = [a for r in results for a in r.audio_times]
    return results, play(pcm_arrivals(arrivals), sent_at)
