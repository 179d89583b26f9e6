"""SSML with the real model, measured in the audio and heard by Whisper: a break is a silence of
its length, ``say-as characters`` is heard letter by letter, ``phoneme`` as written, a ``lang``
span in Spanish inside English is heard as Spanish, and ``prosody rate`` changes the pace."""

from __future__ import annotations

import re

import httpx
import numpy as np
import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, error_rate
from speakstream.client import SpeechSession
from speakstream.server.serve import ThreadedServer

pytestmark = [pytest.mark.model, pytest.mark.asr]
RATE = 24_000
SPANISH = "Gracias por esperar, ya encontré su reserva."


def _pcm(server: ThreadedServer, text: str) -> np.ndarray:
    body = {"text": text, "voice": "af_heart", "format": "pcm"}
    answer = httpx.post(f"{server.url}/invocations", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    return np.frombuffer(answer.content, dtype=np.int16).astype(np.float32) / 32768


def _longest_quiet_s(samples: np.ndarray) -> float:
    """The longest stretch under -40 dBFS in 10 ms frames, in seconds."""
    frames = samples[: len(samples) // 240 * 240].reshape(-1, 240)
    quiet = np.sqrt((frames**2).mean(axis=1)) < 0.01
    longest = run = 0
    for frame_is_quiet in quiet:
        run = run + 1 if frame_is_quiet else 0
        longest = max(longest, run)
    return longest / 100


def test_a_break_leaves_a_silence_of_its_length(kokoro_server: ThreadedServer) -> None:
    text = "Please hold the line. {} I am back with your answer."
    plain = _longest_quiet_s(_pcm(kokoro_server, text.format("")))
    broken = _longest_quiet_s(_pcm(kokoro_server, "<speak>" + text.format('<break time="1500ms"/>') + "</speak>"))
    assert plain < 0.6, plain  # the model's own pauses are short
    assert 1.5 <= broken <= 1.5 + 0.6, broken  # the break, and at most the chunks' own edges


def test_say_as_characters_is_heard_letter_by_letter_and_a_phoneme_as_written(
    kokoro_server: ThreadedServer, asr: Recognizer
) -> None:
    text = "The word is {}. I would like a {}, please."
    spelled = '<say-as interpret-as="characters">dog</say-as>'
    banana = '<phoneme alphabet="ipa" ph="bəˈnænə">Qwertle</phoneme>'
    heard = asr.transcribe(_pcm(kokoro_server, "<speak>" + text.format(spelled, banana) + "</speak>"), RATE).text
    assert _letters(heard) and "dog" not in heard and "banana" in heard.lower(), heard
    plain = asr.transcribe(_pcm(kokoro_server, text.format("dog", "Qwertle")), RATE).text
    assert not _letters(plain) and "dog" in plain and "banana" not in plain.lower(), plain


def _letters(heard: str) -> bool:
    """Whisper wrote letters of D, O, G in order as capitals ("DOG", "D-O-G"; under load it once
    wrote the D as "the": "the OG"), where a word said would be written "dog"."""
    capitals = re.sub(r"[^A-Z]", "", heard)
    return "DO" in capitals or "OG" in capitals


async def test_a_lang_span_in_spanish_is_heard_as_spanish(
    kokoro_server: ThreadedServer, multilingual_asr: Recognizer
) -> None:
    async def spanish_part(text: str) -> float:
        async with SpeechSession(kokoro_server.ws_url) as session:
            result = await session.collect(await session.speak(text, voice="af_heart", format="pcm"))
        samples, rate = decode(bytes(result.audio), "pcm")
        chunk = next(m for m in result.of_type("word_timestamps") if m["text"].startswith("Gracias"))
        part = samples[int(chunk["offset_s"] * rate) :]
        return error_rate([(SPANISH, multilingual_asr.transcribe(part, rate, "es").text)], "es")

    lang = f'<lang xml:lang="es">{SPANISH}</lang>'
    spoken_in_spanish = await spanish_part(f"<speak>Here it is in Spanish. {lang}</speak>")
    read_as_english = await spanish_part(f"<speak>Here it is in Spanish. {SPANISH}</speak>")
    assert spoken_in_spanish <= 0.2 < read_as_english, (spoken_in_spanish, read_as_english)


def test_prosody_rate_slows_the_span_down(kokoro_server: ThreadedServer) -> None:
    text = "Thanks for waiting, I found your booking for Friday."
    normal = len(_pcm(kokoro_server, text))
    slow = len(_pcm(kokoro_server, f'<speak><prosody rate="slow">{text}</prosody></speak>'))
    assert 1.1 < slow / normal < 1.45, slow / normal  # "slow" is 0.8 times the speed: 1.25 times as long
