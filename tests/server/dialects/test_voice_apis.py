"""The vendors' voice APIs through their official SDKs, unchanged (``base_url`` pointed at a
server on the fake engine): ElevenLabs' ``voices.get_all``, ``search``, ``get``, ``delete`` and
cloning; Cartesia's ``voices.list`` (pages), ``get``, ``update``, ``delete``, mixing and cloning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cartesia
import httpx
import pytest
from cartesia import Cartesia
from elevenlabs import ElevenLabs
from elevenlabs.core.api_error import ApiError

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer

SAVED = {"name": "support", "blend": "am_adam:0.7,am_michael:0.3", "description": "calm support agent"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadedServer]:
    running = start_server(FakeEngine(seconds_per_char=0.0002), data_dir=tmp_path, cache_mb=0)
    httpx.post(f"{running.url}/v1/saved-voices", json=SAVED).raise_for_status()
    yield running
    running.stop()


@pytest.fixture
def eleven(server: ThreadedServer) -> ElevenLabs:
    return ElevenLabs(api_key="unused", base_url=server.url)


@pytest.fixture
def sonic(server: ThreadedServer) -> Cartesia:
    return Cartesia(api_key="unused", base_url=server.url)


def test_elevenlabs_lists_built_in_and_saved_voices(eleven: ElevenLabs) -> None:
    voices = eleven.voices.get_all().voices
    assert len(voices) == 55
    saved = next(v for v in voices if v.voice_id == "support")
    assert saved.category == "generated" and saved.is_owner and saved.labels["blend"] == SAVED["blend"]
    heart = next(v for v in voices if v.voice_id == "af_heart")
    assert heart.category == "premade" and heart.labels["gender"] == "female" and heart.preview_url


def test_elevenlabs_search_filters_and_pages(eleven: ElevenLabs) -> None:
    found = eleven.voices.search(search="calm")
    assert [v.voice_id for v in found.voices] == ["support"] and found.total_count == 1
    assert [v.voice_id for v in eleven.voices.search(voice_type="personal").voices] == ["support"]
    spanish = eleven.voices.search(language="es", page_size=100).voices
    assert {v.voice_id for v in spanish} == {"ef_dora", "em_alex", "em_santa"}
    seen, token = [], None
    while True:
        page = eleven.voices.search(page_size=20, next_page_token=token)
        seen += [v.voice_id for v in page.voices]
        if not page.has_more:
            break
        token = page.next_page_token
    assert len(seen) == len(set(seen)) == 55
    first = eleven.voices.search(sort="name", sort_direction="asc", page_size=3).voices
    assert [v.name for v in first] == ["af_alloy", "af_aoede", "af_bella"]


def test_elevenlabs_gets_deletes_and_refuses_cloning(eleven: ElevenLabs) -> None:
    assert eleven.voices.get("support").name == "support"
    with pytest.raises(ApiError) as missing:
        eleven.voices.get("nobody")
    assert missing.value.status_code == 404
    with pytest.raises(ApiError) as built_in:
        eleven.voices.delete("af_heart")
    assert built_in.value.status_code == 400 and built_in.value.body["detail"]["status"] == "read_only_voice"
    with pytest.raises(ApiError) as clone:
        eleven.voices.ivc.create(name="me", files=[("me.wav", b"RIFF")])
    assert clone.value.status_code == 400 and "style encoder" in clone.value.body["detail"]["message"]
    eleven.voices.delete("support")
    assert len(eleven.voices.get_all().voices) == 54


def test_elevenlabs_speaks_with_a_saved_voice(eleven: ElevenLabs) -> None:
    audio = b"".join(eleven.text_to_speech.stream(voice_id="support", text="Hello there.", output_format="pcm_24000"))
    assert len(audio) > 24_000


def test_cartesia_lists_in_pages_and_reads_voices(sonic: Cartesia) -> None:
    voices = list(sonic.voices.list(limit=10))  # the SDK follows starting_after page by page
    assert len(voices) == 55 and len({v.id for v in voices}) == 55
    mine = sonic.voices.list(is_owner=True)
    assert [v.id for v in mine.data] == ["support"]
    support = sonic.voices.get("support")
    assert support.is_owner and support.gender == "masculine" and support.language == "en"
    assert support.locales[0].locale == "en-US" and support.description == "calm support agent"
    british = sonic.voices.get("bf_emma")
    assert british.locales[0].locale == "en-GB" and not british.is_owner
    assert [v.id for v in sonic.voices.list(q="calm", gender="masculine").data] == ["support"]


def test_cartesia_updates_deletes_mixes_and_refuses_cloning(sonic: Cartesia, server: ThreadedServer) -> None:
    renamed = sonic.voices.update("support", name="helpdesk", description="renamed")
    assert renamed.id == "helpdesk" and renamed.description == "renamed"
    with pytest.raises(cartesia.NotFoundError):
        sonic.voices.get("support")
    sonic.voices.delete("helpdesk")
    with pytest.raises(cartesia.BadRequestError, match="style encoder"):
        sonic.voices.clone(clip=b"RIFF", name="me", language="en")
    parts = [{"id": "af_heart", "weight": 3}, {"id": "af_bella", "weight": 1}]
    mixed = httpx.post(f"{server.url}/voices/mix", json={"voices": parts})
    assert mixed.json()["id"] == "af_heart:0.75,af_bella:0.25"
    bad = httpx.post(f"{server.url}/voices/mix", json={"voices": [{"id": "af_heart", "weight": -1}]})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_blend"
