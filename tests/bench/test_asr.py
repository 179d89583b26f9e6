"""The speech checks' recogniser: what it must not hear."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speakstream.bench.asr import Recognizer, error_rate, wer

DATA = Path(__file__).parent / "data"


def test_no_subtitle_credits_over_a_silent_tail(multilingual_asr: Recognizer) -> None:
    """A reply as the server makes it (two chunks, decoded in windows), whose 0.5 s of silence at the end
    Whisper base once transcribed as "作词 作曲 作语 ..." (lyrics, composer...: credits from the
    subtitles it learnt from), failing a Chinese check at CER 0.31. That segment is unsure and
    likely not speech, so it is skipped; the sentence itself is still heard."""
    samples = np.load(DATA / "zh_silent_tail.npy")  # float32 at 16 kHz, exactly as it was heard
    heard = multilingual_asr.transcribe(samples, 16_000, "zh").text
    assert "作词" not in heard and "作曲" not in heard
    assert error_rate([("感谢您的耐心等待，我找到了您的预订。", heard)], "zh") <= 0.1, heard


def test_no_sentence_made_up_over_a_near_silent_tail(multilingual_asr: Recognizer) -> None:
    """The same reply made on an AMD EPYC without AVX-512 (other window sizes), ending in 0.4 s at -80 dB,
    over which Whisper base wrote "这些东西,这些都是很重要的," with every word at the audio's last
    instant (no-speech 0.65 and log-prob -0.63, so the no-speech rule kept it): CER 0.88. An
    improbable segment with silence around it is dropped (``HALLUCINATION_SILENCE_S``)."""
    samples = np.load(DATA / "zh_hallucinated_tail.npy")  # float32 at 16 kHz, exactly as it was heard
    heard = multilingual_asr.transcribe(samples, 16_000, "zh").text
    assert "这些" not in heard
    assert error_rate([("感谢您的耐心等待，我找到了您的预订。", heard)], "zh") <= 0.15, heard


def test_wer_reads_the_ways_whisper_writes_a_time_of_day_as_one() -> None:
    assert wer("with rain after 3 p.m. If you go", "with rain after 3pm. if you go") == 0.0
    assert wer("at 10:15 a.m. at the clinic", "at 10.15 am at the clinic") == 0.0
    assert wer("the map. Mine", "the map, mine") == 0.0
