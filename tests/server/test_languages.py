"""Languages over every route with the real engine: the voice's own language by default, a
``language`` field over it (WebSocket, /invocations, the OpenAI route's extra body), clear errors
that leave the session usable, and word timestamps in a language without spaces."""

from __future__ import annotations

import base64

import httpx
import openai
import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, error_rate
from speakstream.client import ControlEvent, SpeechSession, stream_events
from speakstream.server.serve import ThreadedServer
from tests.server.helpers import drain_until

pytestmark = [pytest.mark.model, pytest.mark.asr, pytest.mark.slow]
SPANISH = "Gracias por esperar, ya encontré su reserva."
CHINESE = "感谢您的耐心等待，我找到了您的预订。"


async def test_a_session_speaks_chinese_and_spanish_with_word_times(
    kokoro_server: ThreadedServer, multilingual_asr: Recognizer
) -> None:
    async with SpeechSession(kokoro_server.ws_url) as session:
        chinese = await session.collect(await session.speak(CHINESE, voice="zf_xiaoxiao"))
        spanish = await session.collect(await session.speak(SPANISH, voice="af_heart", language="es"))
    samples, rate = decode(bytes(chinese.audio), "pcm")
    assert error_rate([(CHINESE, multilingual_asr.transcribe(samples, rate, "zh").text)], "zh") <= 0.3
    words = [w["word"] for m in chinese.of_type("word_timestamps") for w in m["words"]]
    assert "".join(words) == "感谢您的耐心等待我找到了您的预订"
    assert spanish.of_type("synthesis_start")[0]["voice"] == "af_heart@es"
    samples, rate = decode(bytes(spanish.audio), "pcm")
    assert error_rate([(SPANISH, multilingual_asr.transcribe(samples, rate, "es").text)], "es") <= 0.2


@pytest.mark.parametrize(
    ("options", "text", "code"),
    [
        ({"voice": "af_heart"}, CHINESE, "unsupported_text"),
        ({"voice": "af_heart", "language": "klingon"}, SPANISH, "unsupported_language"),
        ({"voice": "af_heart", "language": 5}, SPANISH, "unsupported_language"),
    ],
)
async def test_a_language_problem_is_an_error_frame_and_the_session_goes_on(
    kokoro_server: ThreadedServer, options: dict[str, object], text: str, code: str
) -> None:
    async with SpeechSession(kokoro_server.ws_url) as session:
        await session.speak(text, **options)
        failed = (await drain_until(session, ("error", "synthesis_complete")))[-1]
        assert isinstance(failed, ControlEvent) and failed.message["code"] == code, failed
        after = await session.collect(await session.speak("Still here.", voice="af_heart"))
        assert after.final is not None and after.final["type"] == "synthesis_complete" and after.audio


async def test_invocations_take_a_language(kokoro_server: ThreadedServer, multilingual_asr: Recognizer) -> None:
    body = {"text": SPANISH, "voice": "am_adam", "language": "es", "format": "wav"}
    events = [e async for e in stream_events(f"{kokoro_server.url}/invocations", body)]
    audio = b"".join(base64.b64decode(e.json()["audio"]) for e in events if e.event == "audio_chunk")
    samples, rate = decode(audio, "wav")
    assert error_rate([(SPANISH, multilingual_asr.transcribe(samples, rate, "es").text)], "es") <= 0.2
    async with httpx.AsyncClient(timeout=60) as client:
        bad = await client.post(f"{kokoro_server.url}/invocations", json={"text": CHINESE, "voice": "af_heart"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "unsupported_text"


def test_the_openai_route_takes_a_language_in_its_extra_body(
    kokoro_server: ThreadedServer, multilingual_asr: Recognizer
) -> None:
    client = openai.OpenAI(base_url=f"{kokoro_server.url}/v1", api_key="unused")
    speech = client.audio.speech.create(
        model="tts-1", voice="alloy", input=SPANISH, response_format="mp3", extra_body={"language": "es"}
    )
    samples, rate = decode(speech.content, "mp3")
    assert error_rate([(SPANISH, multilingual_asr.transcribe(samples, rate, "es").text)], "es") <= 0.2


def test_the_voice_list_is_grouped_by_language(kokoro_server: ThreadedServer) -> None:
    listing = httpx.get(f"{kokoro_server.url}/v1/audio/voices", timeout=30).json()
    groups = {g["language"]: g for g in listing["languages"]}
    assert len(groups) == 9 and "zf_xiaobei" in groups["zh"]["voices"] and groups["ja"]["name"] == "Japanese"
    assert sum(len(g["voices"]) for g in groups.values()) == len(listing["voices"]) == 54
