"""Language names, voice specs with ``@language``, the blend rule, script checks and the
normalisation of text in other languages (no model needed)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from speakstream.engine.phonemes import g2p
from speakstream.engine.phonemes.languages import BY_LETTER, all_languages, of_voice, parse_language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.scripts import check_script
from speakstream.engine.voices import VoiceBank, split_language, voice_info
from speakstream.errors import EngineError, InvalidInput, UnknownVoice


def bank() -> VoiceBank:
    return VoiceBank({name: np.full((510, 256), i, np.float32) for i, name in enumerate(("af_heart", "zf_xiaobei"))})


@pytest.mark.parametrize(
    ("value", "tag"),
    [("es", "es"), ("ES", "es"), ("e", "es"), ("Spanish", "es"), ("pt", "pt-br"), ("pt_BR", "pt-br"),
     ("cmn", "zh"), ("zh-CN", "zh"), ("ja", "ja"), ("fr", "fr-fr"), ("en", "en-us"), ("en-gb", "en-gb")],
)  # fmt: skip
def test_a_language_is_named_by_tag_letter_or_name(value: str, tag: str) -> None:
    assert parse_language(value).tag == tag


@pytest.mark.parametrize("value", ["klingon", "", " ", "x" * 100, 3, None, "de"])
def test_an_unknown_language_is_a_clear_error(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_language(value)
    assert caught.value.code == "unsupported_language"


def test_every_voice_prefix_is_a_language() -> None:
    assert {lang.letter for lang in all_languages()} == set("abefhijpz")
    assert (
        of_voice("zf_xiaobei").tag == "zh" and of_voice("jm_kumo").tag == "ja" and of_voice("pm_alex").g2p == "espeak"
    )


def test_a_spec_may_name_the_language_it_reads() -> None:
    assert split_language("af_heart@es") == ("af_heart", BY_LETTER["e"])
    assert split_language("af_heart") == ("af_heart", None)
    info = bank().info("af_heart@es")
    assert (info.name, info.language, info.british) == ("af_heart", "es", False)
    assert np.array_equal(bank().style("af_heart@es", 5), bank().style("af_heart", 5))


def test_a_blend_speaks_its_heaviest_voices_language() -> None:
    assert bank().info("af_heart:1,zf_xiaobei:2").language == "zh"
    assert bank().info("zf_xiaobei,af_heart").language == "zh"  # a tie: the first listed
    assert bank().info("zf_xiaobei:1,af_heart:3@ja").language == "ja"


@pytest.mark.parametrize("spec", ["af_heart@klingon", "af_heart@", "nope@es", "@es"])
def test_bad_language_specs_are_clear_errors(spec: str) -> None:
    with pytest.raises((InvalidInput, UnknownVoice)):
        bank().info(spec)


def test_the_catalogue_says_which_language_each_voice_speaks() -> None:
    assert voice_info("ef_dora").to_dict() == {
        "id": "ef_dora",
        "name": "ef_dora",
        "language": "es",
        "language_name": "Spanish",
        "gender": "female",
    }


@pytest.mark.parametrize(
    ("text", "tag", "script"),
    [("你好", "en-us", "Chinese"), ("こんにちは", "zh", "kana"), ("नमस्ते", "es", "Devanagari"),
     ("Привет", "fr-fr", "Cyrillic"), ("안녕", "ja", "Hangul")],
)  # fmt: skip
def test_text_a_language_cannot_read_is_a_clear_error(text: str, tag: str, script: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_script(f"Hello {text}", parse_language(tag))
    assert caught.value.code == "unsupported_text" and script in caught.value.message


@pytest.mark.parametrize(
    ("text", "tag"),
    [("你好 iPhone", "zh"), ("今日は晴れ", "ja"), ("नमस्ते John", "hi"), ("¿Qué tal? ¡Hola!", "es"), ("Ça va", "fr")],
)
def test_text_a_language_reads_passes(text: str, tag: str) -> None:
    check_script(text, parse_language(tag))


@pytest.mark.parametrize(
    ("tag", "text", "expected"),
    [
        ("es", "Cuesta 5 € o $3, el 20% a las 14:30.", "Cuesta 5 euros o 3 dólares, el 20 por ciento a las 14 y 30."),
        ("fr", "Il est 9:40 et ça coûte 12 €.", "Il est 9 heures 40 et ça coûte 12 euros."),
        ("pt", "Custa R$ 25,50.", "Custa 25,50 reais."),
        ("it", "Alle 10:00 costa 3 €.", "Alle 10 costa 3 euro."),
        ("es", "El 15/03/2026 o el 2026-12-01.", "El 15 de marzo de 2026 o el 1 de diciembre de 2026."),
        ("fr", "Le 1/5/2026, pas le 31/13/2026.", "Le 1 mai 2026, pas le 31/13/2026."),
        ("zh", "一共¥30。", "一共30元。"),
        ("ja", "¥500です。", "500円です。"),
    ],
)
def test_numbers_signs_and_times_are_read_in_the_texts_language(tag: str, text: str, expected: str) -> None:
    assert normalize(text, parse_language(tag)) == expected


def test_english_normalisation_is_unchanged_for_english() -> None:
    assert normalize("Meet at 10:30.", parse_language("en")) == normalize("Meet at 10:30.") == "Meet at 10 30."


def test_a_missing_language_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jieba", None)  # as if speakstream[zh] were not installed
    with pytest.raises(EngineError) as caught:
        g2p.load(parse_language("zh"), english=lambda text: [])
    assert caught.value.code == "language_unavailable" and "speakstream[zh]" in caught.value.message
