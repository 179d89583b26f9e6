"""Every Kokoro language spoken by the real model and heard back by a multilingual Whisper:
two voices per language (every voice is in ``speakstream bench languages``), three sentences
written for the language each. Thresholds sit above the measured baseline (docs/languages.md):
Whisper base's own errors are part of every figure, most of all in Hindi and Japanese."""

from __future__ import annotations

import subprocess
import sys

import pytest

from speakstream.bench.asr import Recognizer, error_rate
from speakstream.bench.experiments.languages import scored, whisper_code
from speakstream.data import language_samples
from speakstream.engine import base
from speakstream.engine.config import EngineConfig
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.languages import all_languages
from speakstream.errors import InvalidInput
from tests.heard import THRESHOLDS

pytestmark = [pytest.mark.slow]


def two_voices(kokoro: KokoroEngine, tag: str) -> list[str]:
    return [v.name for v in kokoro.voices() if v.language == tag][:2]


@pytest.mark.parametrize("tag", [language.tag for language in all_languages()])
def test_every_language_is_heard_back(kokoro: KokoroEngine, multilingual_asr: Recognizer, tag: str) -> None:
    pairs = []
    for voice in two_voices(kokoro, tag):
        for text, reference in scored(tag):
            chunk = kokoro.synthesize(text, voice=voice)
            heard = multilingual_asr.transcribe(chunk.samples, chunk.sample_rate, language=whisper_code(tag))
            pairs.append((reference, heard.text))
            starts = [w.start_s for w in chunk.words]
            assert len(chunk.words) >= 3 and starts == sorted(starts), chunk.words  # word times in every language
            assert all(w.end_s <= chunk.duration_s + 1e-6 for w in chunk.words)
    assert error_rate(pairs, whisper_code(tag)) <= THRESHOLDS[tag], pairs


def test_an_english_voice_reads_spanish_when_asked(kokoro: KokoroEngine, multilingual_asr: Recognizer) -> None:
    text = "Gracias por esperar, ya encontré su reserva."
    spanish = kokoro.synthesize(text, voice="af_heart@es")
    heard = multilingual_asr.transcribe(spanish.samples, spanish.sample_rate, language="es").text
    assert error_rate([(text, heard)], "es") <= 0.2, heard
    english_g2p = kokoro.phonemizer.phonemize(text).phonemes
    assert kokoro.phonemizer.phonemize(text, kokoro.check_voice("af_heart@es").speaks).phonemes != english_g2p


def test_chinese_text_with_an_english_voice_is_a_clear_error(kokoro: KokoroEngine) -> None:
    with pytest.raises(InvalidInput) as caught:
        kokoro.synthesize("你好，今天天气很好。", voice="af_heart")
    assert caught.value.code == "unsupported_text"
    assert kokoro.synthesize("你好，今天天气很好。", voice="af_heart@zh").duration_s > 1


def test_streamed_pieces_join_to_the_whole_in_a_cjk_language(kokoro: KokoroEngine) -> None:
    text = language_samples()["ja"]["reply"]
    pieces = list(base.pieces(kokoro.stream(text, voice="jf_alpha", opening=True)))
    assert len(pieces) > 1 and pieces[-1].last
    streamed = [w.word for piece in pieces for w in piece.words]
    assert streamed == [w.word for w in kokoro.synthesize(text, voice="jf_alpha").words]
    assert len(streamed) > 20 and "予約" in streamed


def test_an_english_only_phonemizer_imports_no_other_g2p() -> None:
    code = (
        "import sys\n"
        "from speakstream.engine.phonemes.phonemizer import Phonemizer\n"
        "p = Phonemizer(); p.load(); p.phonemize('Hello there.')\n"
        "others = ('jieba', 'fugashi', 'cn2an', 'pypinyin', 'misaki.cutlet')\n"
        "print(p.loaded(), sorted(m for m in others if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert result.stdout.strip() == "['en-us'] []"


@pytest.mark.model
def test_an_engine_loads_the_languages_it_is_told_to_as_it_warms() -> None:
    engine = KokoroEngine(EngineConfig(languages=("es", "zh")))
    engine.warm()
    assert engine.phonemizer.loaded() == ["en-us", "es", "zh"]
