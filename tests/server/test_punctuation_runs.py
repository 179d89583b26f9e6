"""A run of marks with no words between, of any mark and any length, is spoken as the pause it
means through the real server: Whisper hears only the words around it, and the audio is those
words' plus at most a short pause."""

from __future__ import annotations

import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, wer
from speakstream.client import SpeechSession
from speakstream.server.serve import ThreadedServer

pytestmark = [pytest.mark.model, pytest.mark.asr, pytest.mark.slow]
WORDS = ("Please hold the line.", "I will be right back.")


@pytest.mark.parametrize(
    ("unit", "length"), [(".", 10), (".", 19_900), ("!?", 400), (". ", 19_900), ("-", 19_900), ("*", 400), ("…", 10)]
)
async def test_a_run_of_marks_is_a_pause_not_speech(
    kokoro_server: ThreadedServer, asr: Recognizer, unit: str, length: int
) -> None:
    run = (unit * (length // len(unit) + 1))[:length]
    async with SpeechSession(kokoro_server.ws_url) as session:
        plain = await session.collect(await session.speak(" ".join(WORDS), voice="af_heart"))
        marked = await session.collect(await session.speak(f"{WORDS[0]} {run} {WORDS[1]}", voice="af_heart"))
    assert marked.final is not None and marked.final["type"] == "synthesis_complete", marked.final
    plain_samples, rate = decode(bytes(plain.audio), "pcm")
    samples, _ = decode(bytes(marked.audio), "pcm")
    heard = asr.transcribe(samples, rate).text
    # every word heard, and no speech in the pause: at most one short word Whisper may invent in a
    # silence ("Please hold the line, so I will be right back." was heard once)
    assert wer(" ".join(WORDS), heard) <= 1 / 9, heard
    assert len(samples) / rate <= len(plain_samples) / rate + 1.0  # at most a short pause more
