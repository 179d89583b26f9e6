"""Seams between words: a window seam inside a word can break it. The cases that made a server
test flaky under load, both with am_onyx: a listener 0.8 s ahead put the second seam 3 frames into
the drawn-out last word, and Whisper heard "booking" as "book, isn't it"; and a later chunk's first
window, sized by its budget, ended 12 frames into it ("book in"): the boundary before the word was
under ``min_frames`` from the window's start, so it did not move there. Seams after the first now
move to a word boundary; the same budget must give a plan whose seams are all between words, and
speech that Whisper hears right."""

from __future__ import annotations

import numpy as np
import pytest

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.engine.decoding import FRAME_SAMPLES, WindowPolicy, decode_windows
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.phonemizer import windows
from speakstream.engine.windowed import Utterance, word_boundaries

VOICE = "am_onyx"
CASES = [
    pytest.param("Thanks for waiting, I found your booking.", True, 0.25, id="opening-chunk-second-seam"),
    pytest.param("I found your booking.", False, 0.3, id="later-chunk-first-seam"),
]


def _front(kokoro: KokoroEngine, text: str) -> Utterance:
    assert kokoro.windowed is not None
    part = windows(kokoro.phonemizer.phonemize(normalize(text), kokoro.check_voice(VOICE).speaks))[0]
    return kokoro.windowed.front(part, kokoro.voice_bank, VOICE, 1.0, text, None, kokoro.config.edges)


def _inside_a_word(u: Utterance, frame: int) -> str | None:
    t = (frame * FRAME_SAMPLES - u.head) / 24_000
    return next((w.word for w in u.words if w.start_s + 0.05 < t < w.end_s - 0.05), None)


def _budget_for_a_seam_inside_the_last_word(u: Utterance, policy: WindowPolicy, opening: bool, into: float) -> float:
    """The budget (frames) that, without snapping, ends the window sized by it ``into`` seconds
    into "booking" (the second window of an opening chunk, the first of a later one)."""
    start = u.head // FRAME_SAMPLES + (policy.first_frames if opening else 0)
    target = round((u.head + (u.words[-1].start_s + into) * 24_000) / FRAME_SAMPLES)
    return (target - start + 2 * policy.context_frames) / policy.safety + 0.5


@pytest.mark.parametrize(("text", "opening", "into"), CASES)
def test_seams_after_the_first_fall_between_words(
    kokoro: KokoroEngine, asr: Recognizer, text: str, opening: bool, into: float
) -> None:
    assert kokoro.windowed is not None
    model, u = kokoro.windowed, _front(kokoro, text)
    policy = model.policy
    budget = _budget_for_a_seam_inside_the_last_word(u, policy, opening, into)
    start, stop = u.head // FRAME_SAMPLES, min(u.frames, -(-u.end // FRAME_SAMPLES))
    sized = 1 if opening else 0  # the window the budget sizes
    boundaries = word_boundaries(u)
    unsnapped = list(policy.windows(start, stop, opening=opening, budget=lambda: budget))
    assert _inside_a_word(u, unsnapped[sized][1]) == "booking"  # the case: without snapping, a seam in the word
    plan = list(policy.windows(start, stop, opening=opening, budget=lambda: budget, boundaries=boundaries))
    assert [_inside_a_word(u, b) for _, b in plan[sized:-1]] == [None] * len(plan[sized:-1])

    pieces = decode_windows(
        lambda s, e, phase: model.decode(u, s, e, phase, None),
        u.f0,
        u.frames,
        head=u.head,
        end=u.end,
        harmonics=model.harmonics,
        rate=model.rate,
        policy=policy,
        opening=opening,
        budget=lambda: budget,
        tail=u.tail,
        speech_end=u.speech_end,
        boundaries=boundaries,
    )
    samples = np.concatenate([p for p, _ in pieces])
    assert corpus_wer([(text, asr.transcribe(samples, 24_000).text)]) == 0
