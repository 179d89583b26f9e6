"""The phoneme tools on the fake engine with the real G2P (it needs no model): a text's phonemes in
every language, word by word, and speech from phonemes given directly (what the engine is handed
is the phonemes as inline words, so the G2P leaves them as they are)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from speakstream.data import language_samples
from speakstream.engine.fake import FakeEngine
from speakstream.engine.phonemes.inline import as_inline
from speakstream.engine.phonemes.languages import all_languages
from speakstream.errors import InvalidInput
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from speakstream.text.lexicon import INLINE


@pytest.fixture(scope="module")
def engine() -> FakeEngine:
    return FakeEngine(seconds_per_char=0.0002)


@pytest.fixture(scope="module")
def server(engine: FakeEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    running = start_server(engine, data_dir=tmp_path_factory.mktemp("data"), cache_mb=0)
    yield running
    running.stop()


@pytest.mark.parametrize("language", [language.tag for language in all_languages()])
def test_every_language_shows_its_phonemes_word_by_word(server: ThreadedServer, language: str) -> None:
    text = language_samples()[language]["sentences"][0]
    made = httpx.post(f"{server.url}/v1/phonemize", json={"text": text, "language": language}, timeout=60).json()
    assert made["language"] == language and made["phonemes"] and len(made["tokens"]) == len(made["phonemes"])
    assert made["words"] and all(w["phonemes"] and w["phonemes"] in made["phonemes"] for w in made["words"])


def test_each_word_shows_what_a_rule_for_it_would_replace(server: ThreadedServer) -> None:
    url = f"{server.url}/v1/phonemize"
    said = httpx.post(url, json={"text": "I have 3 cats.", "language": "en-us"}).json()
    assert [(w["text"], w["phonemes"]) for w in said["words"]][2:] == [("3", "θɹˈi"), ("cats", "kˈæts")]
    kokoro = httpx.post(f"{server.url}/dev/phonemize", json={"text": "tomato", "language": "a"}).json()
    assert kokoro["phonemes"] == "təmˈATO"


def test_the_voice_names_the_language(server: ThreadedServer) -> None:
    made = httpx.post(f"{server.url}/v1/phonemize", json={"text": "Hola amigo.", "voice": "ef_dora"}).json()
    assert made["language"] == "es" and made["phonemes"] == "ˈola amˈiɣo."


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"text": ""}, "empty_text"),
        ({"text": "Hi.", "language": "tlh"}, "unsupported_language"),
        ({"text": "你好", "language": "en-us"}, "unsupported_text"),
        ({"text": "Hi.", "voice": "af_nobody"}, "unknown_voice"),
        ({"text": "Hi.", "normalize": "yes"}, "invalid_message"),
    ],
)
def test_bad_phonemize_requests_get_their_own_error(server: ThreadedServer, body: dict[str, object], code: str) -> None:
    answer = httpx.post(f"{server.url}/v1/phonemize", json=body)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code


def test_phonemes_given_are_spoken_as_they_are(server: ThreadedServer, engine: FakeEngine) -> None:
    before = len(engine.calls)
    body = {"phonemes": "həlˈO, wˈɜɹld!", "voice": "af_bella", "format": "pcm"}
    spoken = httpx.post(f"{server.url}/v1/audio/from-phonemes", json=body)
    assert spoken.status_code == 200 and len(spoken.content) > 4_800
    assert engine.calls[before:] == ["[həlˈO](/həlˈO/), [wˈɜɹld](/wˈɜɹld/)!"]
    wav = httpx.post(f"{server.url}/dev/generate_from_phonemes", json={"phonemes": "ˈola", "voice": "ef_dora"})
    assert wav.headers["content-type"] == "audio/wav" and wav.content[:4] == b"RIFF"


@pytest.mark.parametrize(
    ("phonemes", "code"),
    [
        ("", "invalid_phonemes"),
        ("hɛlo ʘʘ", "invalid_phonemes"),
        ("a" * 6000, "invalid_phonemes"),
        (7, "invalid_phonemes"),
    ],
)
def test_bad_phonemes_are_refused_before_any_audio(server: ThreadedServer, phonemes: object, code: str) -> None:
    answer = httpx.post(f"{server.url}/v1/audio/from-phonemes", json={"phonemes": phonemes})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code


def test_phonemes_become_inline_words_and_punctuation() -> None:
    text = as_inline("¿kˈe tˈal? bjˈen.")
    assert text == "¿[kˈe](/kˈe/) [tˈal](/tˈal/)? [bjˈen](/bjˈen/)."
    assert [m.group(2) for m in INLINE.finditer(text)] == ["kˈe", "tˈal", "bjˈen"]
    with pytest.raises(InvalidInput):
        as_inline("a/b")


def test_a_mark_inside_a_word_stays_in_the_word() -> None:
    """espeak writes Hindi's उड़ान as ``ʊr.ˈaːn``: read as punctuation and plain text, its letters
    went through the Hindi G2P and were spoken as gibberish."""
    text = as_inline("ˌaːpkˌi ʊr.ˈaːn kˈʌl.")
    assert [m.group(1) for m in INLINE.finditer(text)] == ["ˌaːpkˌi", "ʊr.ˈaːn", "kˈʌl"]
    assert text.endswith(")."), text
