"""Pronunciation dictionaries through the APIs (the official ``elevenlabs`` and ``cartesia`` SDKs, unchanged) and
in every route's requests, on the fake engine: what the engine is given is the chunks' text."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import cartesia
import httpx
import pytest
import websockets
from cartesia import Cartesia
from elevenlabs import ElevenLabs
from elevenlabs.core.api_error import ApiError

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import cartesia_request, elevenlabs_url, read_until, ws_base

PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>UN</grapheme><alias>United Nations</alias></lexeme>
  <lexeme><grapheme>Zyx</grapheme><phoneme>zˈɪks</phoneme></lexeme>
</lexicon>
"""
RULES = [
    {"type": "alias", "string_to_replace": "Kokoro", "alias": "Coco Row"},
    {"type": "phoneme", "string_to_replace": "tomato", "phoneme": "təˈmɑːtoʊ", "alphabet": "ipa"},
]


def _server(directory: Path | None, **config: object) -> ThreadedServer:
    return start_server(FakeEngine(seconds_per_char=0.0005), data_dir=directory, cache_mb=0, **config)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadedServer]:
    running = _server(tmp_path / "dictionaries")
    yield running
    running.stop()


def _sdk(server: ThreadedServer) -> ElevenLabs:
    return ElevenLabs(api_key="unused", base_url=server.url)


def _spoken(server: ThreadedServer, body: dict[str, object]) -> str:
    """The text the engine was given for an ``/invocations`` request (its chunks, joined)."""
    texts = []
    with httpx.stream("POST", f"{server.url}/invocations", json=body, headers={"accept": "text/event-stream"}) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data:") and '"text"' in line:
                texts.append(json.loads(line[5:])["text"])
    return " ".join(t for t in texts if t)


def _engine_texts(server: ThreadedServer) -> list[str]:
    """Every text the fake engine was asked to speak."""
    engine = server.runtime.engine
    assert isinstance(engine, FakeEngine)
    return list(engine.calls)


def test_the_sdk_creates_lists_changes_and_downloads_dictionaries(server: ThreadedServer) -> None:
    client = _sdk(server)
    made = client.pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    assert made.version_rules_num == 2
    from_file = client.pronunciation_dictionaries.create_from_file(
        name="from pls", file=("lexicon.pls", io.BytesIO(PLS.encode()), "application/pls+xml")
    )
    assert from_file.version_rules_num == 2
    listed = client.pronunciation_dictionaries.list()
    assert {d.id for d in listed.pronunciation_dictionaries} == {made.id, from_file.id}
    added = client.pronunciation_dictionaries.rules.add(
        made.id,
        rules=[{"type": "alias", "string_to_replace": "API", "alias": "A P I"}],  # type: ignore[list-item]
    )
    assert added.version_rules_num == 3 and added.version_id != made.version_id
    removed = client.pronunciation_dictionaries.rules.remove(made.id, rule_strings=["Kokoro"])
    got = client.pronunciation_dictionaries.get(made.id)
    assert got.latest_version_id == removed.version_id
    assert [r.string_to_replace for r in got.rules] == ["tomato", "API"]
    old = b"".join(client.pronunciation_dictionaries.download(dictionary_id=made.id, version_id=made.version_id))
    assert b"<grapheme>Kokoro</grapheme><alias>Coco Row</alias>" in old and b"API" not in old


def test_requests_speak_the_version_they_name_or_the_latest(server: ThreadedServer) -> None:
    client = _sdk(server)
    made = client.pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    client.pronunciation_dictionaries.rules.set(
        made.id,
        rules=[{"type": "alias", "string_to_replace": "Kokoro", "alias": "the model"}],  # type: ignore[list-item]
    )
    text = "Kokoro likes a tomato."
    pinned = {"id": made.id, "version_id": made.version_id}
    assert _spoken(server, {"text": text, "pronunciation_dictionaries": [pinned]}) == (
        "Coco Row likes a tomato."  # clients see the word; the engine gets its phonemes:
    )
    assert "Coco Row likes a [tomato](/təˈmɑːtoʊ/)." in _engine_texts(server)
    assert _spoken(server, {"text": text, "pronunciation_dictionaries": [made.id]}) == "the model likes a tomato."
    assert _spoken(server, {"text": text}) == text


def test_the_elevenlabs_routes_take_locators(server: ThreadedServer) -> None:
    client = _sdk(server)
    made = client.pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    locator = {"pronunciation_dictionary_id": made.id, "version_id": made.version_id}
    with_timestamps = client.text_to_speech.convert_with_timestamps(
        voice_id="af_heart",
        text="Hello Kokoro.",
        output_format="pcm_24000",
        pronunciation_dictionary_locators=[locator],
    )
    assert "".join(with_timestamps.alignment.characters).strip() == "Hello Kokoro."  # type: ignore[union-attr]
    spoken = with_timestamps.normalized_alignment
    assert "".join(spoken.characters).strip() == "Hello Coco Row."  # type: ignore[union-attr]
    with pytest.raises(ApiError) as missing:
        client.text_to_speech.convert_with_timestamps(
            voice_id="af_heart",
            text="Hello.",
            pronunciation_dictionary_locators=[{"pronunciation_dictionary_id": "nope"}],
        )
    assert missing.value.status_code == 404
    assert missing.value.body["detail"]["status"] == "unknown_dictionary"  # type: ignore[index]


async def test_a_stream_of_appends_gets_the_rules_wherever_the_fragments_fall(server: ThreadedServer) -> None:
    client = _sdk(server)
    made = client.pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    url = server.url.replace("http", "ws") + "/invocations-bidirectional-stream"
    texts = []
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "config", "pronunciation_dictionaries": [made.id]}))
        for fragment in ["We ", "tried Ko", "ko", "ro, the", " toma", "to model. ", "Kokoro", "s are not it."]:
            await ws.send(json.dumps({"type": "append", "text": fragment}))
        await ws.send(json.dumps({"type": "flush"}))
        async for frame in ws:
            if isinstance(frame, str):
                message = json.loads(frame)
                if message["type"] == "word_timestamps":
                    texts.append(message["text"])
                if message["type"] in ("synthesis_complete", "error"):
                    assert message["type"] == "synthesis_complete", message
                    break
    assert " ".join(texts) == "We tried Coco Row, the tomato model. Kokoros are not it."
    assert "the [tomato](/təˈmɑːtoʊ/) model." in " ".join(_engine_texts(server))


def test_dictionaries_survive_a_restart(tmp_path: Path) -> None:
    first = _server(tmp_path)
    try:
        made = _sdk(first).pronunciation_dictionaries.create_from_rules(name="kept", rules=RULES)  # type: ignore[arg-type]
    finally:
        first.stop()
    second = _server(tmp_path)
    try:
        got = _sdk(second).pronunciation_dictionaries.get(made.id)
        assert got.latest_version_id == made.version_id and len(got.rules) == 2
        assert _spoken(second, {"text": "Kokoro.", "pronunciation_dictionaries": [made.id]}) == "Coco Row."
    finally:
        second.stop()


def test_lexicon_files_load_at_startup_and_are_read_only(tmp_path: Path) -> None:
    files = tmp_path / "lexicons"
    files.mkdir()
    (files / "brands.pls").write_text(PLS, "utf-8")
    (files / "acronyms.json").write_text(json.dumps([{"type": "alias", "string_to_replace": "TTS", "alias": "speech"}]))
    server = _server(None, lexicons_dir=files)
    try:
        body = {"text": "The UN and Zyx like TTS.", "pronunciation_dictionaries": ["brands", "acronyms"]}
        assert _spoken(server, body) == "The United Nations and Zyx like speech."
        assert "The United Nations and [Zyx](/zˈɪks/) like speech." in _engine_texts(server)
        with pytest.raises(ApiError) as refused:
            _sdk(server).pronunciation_dictionaries.rules.remove("brands", rule_strings=["UN"])
        assert refused.value.status_code == 400
        assert refused.value.body["detail"]["status"] == "read_only_dictionary"  # type: ignore[index]
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("rules", "code"),
    [
        ([{"type": "alias", "string_to_replace": "a"}], "invalid_rule"),
        ([{"type": "spell", "string_to_replace": "a", "alias": "b"}], "invalid_rule"),
        ([{"type": "phoneme", "string_to_replace": "a", "phoneme": "ʘ9", "alphabet": "ipa"}], "invalid_phonemes"),
        (
            [{"type": "phoneme", "string_to_replace": "a", "phoneme": "K QQ1", "alphabet": "cmu-arpabet"}],
            "invalid_rule",
        ),
        ("not a list", "invalid_rule"),
    ],
)
def test_a_bad_rule_is_a_400_with_the_reason(server: ThreadedServer, rules: object, code: str) -> None:
    response = httpx.post(
        f"{server.url}/v1/pronunciation-dictionaries/add-from-rules", json={"name": "x", "rules": rules}
    )
    assert response.status_code == 400 and response.json()["detail"]["status"] == code


def test_the_store_is_bounded_with_clear_errors(tmp_path: Path) -> None:
    server = _server(tmp_path, max_dictionaries=2, max_dictionary_rules=3)
    add = f"{server.url}/v1/pronunciation-dictionaries/add-from-rules"
    try:
        many = [{"type": "alias", "string_to_replace": f"w{i}", "alias": "x"} for i in range(4)]
        too_big = httpx.post(add, json={"name": "big", "rules": many})
        assert too_big.status_code == 413 and too_big.json()["detail"]["status"] == "too_many_rules"
        for name in ("one", "two"):
            assert httpx.post(add, json={"name": name, "rules": many[:1]}).status_code == 200
        third = httpx.post(add, json={"name": "three", "rules": many[:1]})
        assert third.status_code == 413 and third.json()["detail"]["status"] == "too_many_dictionaries"
    finally:
        server.stop()


def test_a_request_naming_an_unknown_dictionary_is_refused_before_any_audio(server: ThreadedServer) -> None:
    for body in ({"text": "Hi.", "pronunciation_dictionaries": ["missing"]}, {"input": "Hi.", "voice": "af_heart"}):
        path = "/invocations" if "text" in body else "/v1/audio/speech"
        if path == "/v1/audio/speech":
            body = {**body, "model": "kokoro", "pronunciation_dictionaries": [{"id": "x", "version_id": "y"}]}
        response = httpx.post(server.url + path, json=body)
        assert response.status_code == 404, response.text
        assert "dictionary" in response.text
    bad = httpx.post(server.url + "/invocations", json={"text": "Hi.", "pronunciation_dictionaries": "x"})
    assert bad.status_code == 400 and "invalid_dictionaries" in bad.text


async def test_cartesia_takes_a_pronunciation_dict_id(server: ThreadedServer) -> None:
    made = _sdk(server).pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    url = f"{ws_base(server)}/tts/websocket?cartesia_version=2025-04-16"
    async with websockets.connect(url) as ws:
        await ws.send(cartesia_request("c1", "Kokoro speaks.", more=False, pronunciation_dict_id=made.id))
        messages = await read_until(ws, lambda m: m["type"] in ("done", "error"))
        await ws.send(cartesia_request("c2", "Hi.", more=False, pronunciation_dict_id="missing"))
        refused = await read_until(ws, lambda m: m["type"] in ("done", "error"))
    words = [w for m in messages if m["type"] == "timestamps" for w in m["word_timestamps"]["words"]]
    assert " ".join(words) == "Kokoro speaks."  # the client's own words, timed as spoken:
    assert "Coco Row speaks." in _engine_texts(server)
    assert refused[-1]["type"] == "error" and "unknown_dictionary" in json.dumps(refused[-1])


async def test_our_websocket_says_which_dictionary_it_does_not_have_and_goes_on(server: ThreadedServer) -> None:
    url = server.url.replace("http", "ws") + "/invocations-bidirectional-stream"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "text", "text": "Hi.", "pronunciation_dictionaries": ["missing"]}))
        await ws.send(json.dumps({"type": "text", "text": "Hi again."}))
        kinds = []
        async for frame in ws:
            if isinstance(frame, str):
                message = json.loads(frame)
                kinds.append(message.get("code") or message["type"])
                if message["type"] == "synthesis_complete":
                    break
    assert "unknown_dictionary" in kinds and kinds[-1] == "synthesis_complete"


def test_the_cartesia_sdk_creates_lists_updates_and_deletes_dictionaries(server: ThreadedServer) -> None:
    client = Cartesia(api_key="unused", base_url=server.url)
    made = client.pronunciation_dicts.create(
        name="brands", items=[{"text": "Kokoro", "alias": "Coco Row"}, {"text": "Zyx", "alias": "<<z|ˈ|ɪ|k|s>>"}]
    )
    assert [i.alias for i in client.pronunciation_dicts.retrieve(made.id).items] == ["Coco Row", "<<z|ˈ|ɪ|k|s>>"]
    others = [client.pronunciation_dicts.create(name=f"d{i}").id for i in range(3)]
    assert [d.id for d in client.pronunciation_dicts.list(limit=2)] == [made.id, *others]  # page by page
    body = {
        "model_id": "sonic-2",
        "transcript": "kokoro and Zyx.",
        "voice": {"mode": "id", "id": "af_heart"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000},
    }
    client.tts.generate(**body, pronunciation_dict_id=made.id).read()  # type: ignore[arg-type]
    assert "Coco Row and [Zyx](/zˈɪks/)." in _engine_texts(server)  # any capitalisation, as Cartesia's
    updated = client.pronunciation_dicts.update(made.id, items=[{"text": "Kokoro", "alias": "the model"}])
    assert [i.alias for i in updated.items] == ["the model"]
    client.pronunciation_dicts.delete(made.id)
    assert made.id not in [d.id for d in client.pronunciation_dicts.list()]
    with pytest.raises(cartesia.NotFoundError):
        client.pronunciation_dicts.retrieve(made.id)


async def test_elevenlabs_alignment_is_the_clients_text_and_normalized_alignment_the_spoken(
    server: ThreadedServer,
) -> None:
    client = _sdk(server)
    made = client.pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
    locator = {"pronunciation_dictionary_id": made.id}
    url = elevenlabs_url(server, multi=False)
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"text": " ", "pronunciation_dictionary_locators": [locator]}))
        for fragment in ("We tried Ko", "koro at 10:30. ", "Then a tomato, ", "please. ", ""):
            await ws.send(json.dumps({"text": fragment}))
        messages = await read_until(ws, lambda m: m.get("isFinal"))
    written = "".join(c for m in messages if m.get("alignment") for c in m["alignment"]["chars"])
    spoken = "".join(c for m in messages if m.get("alignment") for c in m["normalizedAlignment"]["chars"])
    assert written.split() == "We tried Kokoro at 10:30. Then a tomato, please.".split()
    assert spoken.split() == "We tried Coco Row at 10:30. Then a tomato, please.".split()


def test_a_store_that_cannot_be_written_serves_what_it_has_and_refuses_changes(tmp_path: Path) -> None:
    """A data folder that cannot be made (as on a read-only root): the server starts, says so on
    /ping, lists what it has, and answers every change with 507 ``read_only_store``, keeping nothing."""
    (tmp_path / "file").write_text("not a folder")
    server = _server(tmp_path / "file" / "data")
    try:
        assert httpx.get(f"{server.url}/ping").json()["store"] == "read-only"
        with pytest.raises(ApiError) as refused:
            _sdk(server).pronunciation_dictionaries.create_from_rules(name="brands", rules=RULES)  # type: ignore[arg-type]
        assert refused.value.status_code == 507
        assert refused.value.body["detail"]["status"] == "read_only_store"  # type: ignore[index]
        cartesia = httpx.post(f"{server.url}/pronunciation-dicts", json={"name": "x", "items": []})
        assert cartesia.status_code == 507 and "read_only_store" in cartesia.text, cartesia.text
        assert _sdk(server).pronunciation_dictionaries.list().pronunciation_dictionaries == []
    finally:
        server.stop()
