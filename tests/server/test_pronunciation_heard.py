"""Pronunciation rules with the real model, heard by Whisper: dictionaries made with the official
``elevenlabs`` and ``cartesia`` SDKs and used by their text-to-speech and by pipecat's ElevenLabs service;
a phoneme rule checked in the phonemes sent to the model; inline phonemes in plain text."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from cartesia import Cartesia
from elevenlabs import ElevenLabs
from pipecat.frames.frames import EndFrame, Frame, TTSAudioRawFrame, TTSSpeakFrame, TTSStoppedFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.services.elevenlabs.tts import ElevenLabsTTSService, PronunciationDictionaryLocator
from pipecat.workers.runner import WorkerRunner

from speakstream.bench.asr import Recognizer
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.languages import parse_language
from speakstream.server.serve import ThreadedServer
from speakstream.text.lexicon import Lexicon, Rule
from tests.server.dialects.test_frameworks import _Sink

pytestmark = [pytest.mark.model, pytest.mark.asr]
RATE = 24_000
ALIAS = {"type": "alias", "string_to_replace": "Zorbixal", "alias": "Saturday"}
PHONEME = {"type": "phoneme", "string_to_replace": "Qwertle", "phoneme": "bəˈnænə", "alphabet": "ipa"}
TEXT = "Our next meeting is on Zorbixal at noon. I would like a Qwertle, please."


def _heard(asr: Recognizer, pcm: bytes) -> str:
    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    return asr.transcribe(samples, RATE).text.lower()


@pytest.fixture
def dictionary(kokoro_server: ThreadedServer) -> Any:
    client = ElevenLabs(api_key="unused", base_url=kokoro_server.url)
    return client.pronunciation_dictionaries.create_from_rules(name="heard", rules=[ALIAS, PHONEME])  # type: ignore[list-item]


def test_a_phoneme_rule_sends_its_phonemes_to_the_model(kokoro: KokoroEngine) -> None:
    lexicon = Lexicon(
        [
            Rule(string="Qwertle", phoneme="bəˈnænə"),
            Rule(string="Flimbo", phoneme="B AH0 N AE1 N AH0", alphabet="cmu-arpabet"),
        ]
    )
    english = parse_language("en-us")
    for word in ("Qwertle", "Flimbo"):
        parts = kokoro.phoneme_windows(lexicon.apply(f"I would like a {word}, please."), english)
        spoken = next(w for w in parts[0].words if w.text == word)
        assert parts[0].phonemes[spoken.first : spoken.end] == "bənˈænə"  # Kokoro's stress, before the vowel


def test_the_sdk_streams_speech_with_a_dictionary_as_its_rules_say(
    kokoro_server: ThreadedServer, dictionary: Any, asr: Recognizer
) -> None:
    client = ElevenLabs(api_key="unused", base_url=kokoro_server.url)
    locator = {"pronunciation_dictionary_id": dictionary.id, "version_id": dictionary.version_id}
    stream = client.text_to_speech.stream(
        voice_id="af_heart", text=TEXT, output_format="pcm_24000", pronunciation_dictionary_locators=[locator]
    )
    heard = _heard(asr, b"".join(stream))
    assert "saturday" in heard and "banana" in heard, heard
    plain = _heard(
        asr, b"".join(client.text_to_speech.stream(voice_id="af_heart", text=TEXT, output_format="pcm_24000"))
    )
    assert "saturday" not in plain and "banana" not in plain, plain


def test_inline_phonemes_in_plain_text_are_heard_as_written(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    client = ElevenLabs(api_key="unused", base_url=kokoro_server.url)
    text = "I would like a [Qwertle](/bəˈnænə/), please."
    heard = _heard(
        asr, b"".join(client.text_to_speech.stream(voice_id="af_heart", text=text, output_format="pcm_24000"))
    )
    assert "banana" in heard and "qwertle" not in heard, heard


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pipecat deprecates the locators for its own text transforms
async def test_pipecat_elevenlabs_service_speaks_with_a_dictionary_locator(
    kokoro_server: ThreadedServer, dictionary: Any, asr: Recognizer
) -> None:
    host = kokoro_server.url.split("//", 1)[1].rstrip("/")
    tts = ElevenLabsTTSService(
        api_key="unused",
        url=f"ws://{host}",
        settings=ElevenLabsTTSService.Settings(voice="af_heart"),
        sample_rate=RATE,
        pronunciation_dictionary_locators=[
            PronunciationDictionaryLocator(pronunciation_dictionary_id=dictionary.id, version_id=dictionary.version_id)
        ],
    )
    frames: asyncio.Queue[Frame] = asyncio.Queue()
    worker = PipelineWorker(
        Pipeline([tts, _Sink(frames)]), cancel_on_idle_timeout=False, params=PipelineParams(audio_out_sample_rate=RATE)
    )
    runner = WorkerRunner()
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    audio = bytearray()
    try:
        await asyncio.sleep(0.5)  # the service connects on its StartFrame
        await worker.queue_frame(TTSSpeakFrame(TEXT))
        while not isinstance(frame := await asyncio.wait_for(frames.get(), 60), TTSStoppedFrame):
            if isinstance(frame, TTSAudioRawFrame):
                audio += frame.audio
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 30)
    heard = _heard(asr, bytes(audio))
    assert "saturday" in heard and "banana" in heard, heard


def test_the_cartesia_sdk_speaks_with_its_dictionary(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    client = Cartesia(api_key="unused", base_url=kokoro_server.url)
    made = client.pronunciation_dicts.create(
        name="heard",
        items=[{"text": "Zorbixal", "alias": "Saturday"}, {"text": "Qwertle", "alias": "<<b|ə|ˈ|n|æ|n|ə>>"}],
    )
    audio = client.tts.generate(
        model_id="sonic-2",
        transcript=TEXT,
        voice={"mode": "id", "id": "af_heart"},
        output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": RATE},
        pronunciation_dict_id=made.id,
    ).read()
    heard = _heard(asr, audio)
    assert "saturday" in heard and "banana" in heard, heard
