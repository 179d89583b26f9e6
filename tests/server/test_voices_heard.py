"""Saved voices, dialogue and phonemes with the real model, heard by Whisper: the official
``elevenlabs`` SDK lists, reads and speaks with a saved voice and speaks a two-voice dialogue
(each speaker's words in order, the pause between turns measured); the ``cartesia`` SDK lists,
reads and speaks with one; speech from the phonemes of a text, in every language."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from cartesia import Cartesia
from elevenlabs import ElevenLabs

from speakstream.bench.asr import Recognizer, error_rate, wer
from speakstream.bench.experiments.languages import scored, whisper_code
from speakstream.engine.phonemes.languages import all_languages
from speakstream.server.serve import ThreadedServer
from tests.heard import STREAMED

pytestmark = [pytest.mark.model, pytest.mark.asr]
RATE = 24_000
SAVED = {"name": "support", "blend": "am_adam:0.7,am_michael:0.3", "speed": 1.1}
AGENT = "Thank you for calling the help desk. How can I help you today?"
CALLER = "My parcel has not arrived and I would like a refund please."


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768


@pytest.fixture
def saved(kokoro_server: ThreadedServer) -> Iterator[str]:
    url = f"{kokoro_server.url}/v1/saved-voices"
    httpx.post(url, json=SAVED).raise_for_status()
    try:
        yield SAVED["name"]
    finally:  # the session's servers share one data directory
        httpx.delete(f"{url}/{SAVED['name']}")


def test_elevenlabs_lists_reads_and_speaks_with_a_saved_voice(
    kokoro_server: ThreadedServer, saved: str, asr: Recognizer
) -> None:
    client = ElevenLabs(api_key="unused", base_url=kokoro_server.url)
    found = client.voices.search(page_size=100)
    assert found.total_count == 55 and {saved, "af_heart"} <= {v.voice_id for v in found.voices}
    assert client.voices.get(saved).labels["blend"] == SAVED["blend"]
    pcm = b"".join(client.text_to_speech.stream(voice_id=saved, text=CALLER, output_format="pcm_24000"))
    assert wer(CALLER, asr.transcribe(_samples(pcm), RATE).text) <= 0.1


def test_cartesia_lists_reads_and_speaks_with_a_saved_voice(
    kokoro_server: ThreadedServer, saved: str, asr: Recognizer
) -> None:
    client = Cartesia(api_key="unused", base_url=kokoro_server.url)
    assert saved in [v.id for v in client.voices.list(limit=100)]
    assert client.voices.get(saved).gender == "masculine"
    pcm = client.tts.generate(
        model_id="sonic-2",
        transcript=CALLER,
        voice={"mode": "id", "id": saved},
        output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": RATE},
    ).read()
    assert wer(CALLER, asr.transcribe(_samples(pcm), RATE).text) <= 0.1


def test_a_two_voice_dialogue_is_heard_speaker_by_speaker(
    kokoro_server: ThreadedServer, saved: str, asr: Recognizer
) -> None:
    client = ElevenLabs(api_key="unused", base_url=kokoro_server.url)
    inputs: Any = [{"text": AGENT, "voice_id": "af_heart"}, {"text": CALLER, "voice_id": saved}]
    audio, segments = bytearray(), []
    for chunk in client.text_to_dialogue.stream_with_timestamps(inputs=inputs, output_format="pcm_24000"):
        audio += base64.b64decode(chunk.audio_base_64 or "")
        segments += chunk.voice_segments or []
    samples = _samples(bytes(audio))
    turns = {}
    for index, text in enumerate((AGENT, CALLER)):
        mine = [s for s in segments if s.dialogue_input_index == index]
        assert {s.voice_id for s in mine} == {inputs[index]["voice_id"]}
        start, end = mine[0].start_time_seconds, mine[-1].end_time_seconds
        turns[index] = (start, end)
        assert wer(text, asr.transcribe(samples[int(start * RATE) : int(end * RATE)], RATE).text) <= 0.1
    assert wer(f"{AGENT} {CALLER}", asr.transcribe(samples, RATE).text) <= 0.1  # and in order
    gap = _silence_between(samples, turns[0][1], turns[1][0])
    assert gap >= kokoro_server.runtime.config.turn_pause_s  # the turn pause, and each turn's edge silence


def _silence_between(samples: np.ndarray, end_s: float, start_s: float) -> float:
    """The silence heard around the boundary of two turns: the quiet 10 ms frames (under -45 dBFS)
    in a row that hold it."""
    frames = samples[: len(samples) // 240 * 240].reshape(-1, 240)
    quiet = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-9) < -45
    middle = int((end_s + start_s) / 2 * 100)
    first, last = middle, middle
    while first > 0 and quiet[first - 1]:
        first -= 1
    while last < len(quiet) and quiet[last]:
        last += 1
    return (last - first) / 100


@pytest.mark.parametrize("language", [language.tag for language in all_languages()])
def test_speech_from_a_texts_phonemes_is_heard_as_the_text(
    kokoro_server: ThreadedServer, multilingual_asr: Recognizer, language: str
) -> None:
    """The language's three sentences, each in one of its first two voices, pooled: one pair alone
    is misheard now and then (Whisper in Urdu once wrote Hindi's "dhanyavaad" as "Thank you for
    your time.", 0.65 CER, failing the bound over two pairs of the first sentence), and the second
    Hindi sentence showed a defect the first did not (espeak's ``ʊr.ˈaːn`` read as letters)."""
    url, code, pairs = kokoro_server.url, whisper_code(language), []
    voices = [v for v in kokoro_server.runtime.require_scheduler().engine.voices() if v.language == language]
    for index, (text, reference) in enumerate(scored(language)):  # Hindi's references: Urdu script
        made = httpx.post(f"{url}/v1/phonemize", json={"text": text, "language": language}, timeout=60).json()
        body = {"phonemes": made["phonemes"], "voice": voices[index % min(2, len(voices))].name, "format": "pcm"}
        pcm = httpx.post(f"{url}/v1/audio/from-phonemes", json=body, timeout=120)
        assert pcm.status_code == 200, pcm.text
        pairs.append((reference, multilingual_asr.transcribe(_samples(pcm.content), RATE, code).text))
    assert error_rate(pairs, code) <= STREAMED[language], pairs
