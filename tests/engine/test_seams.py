"""Seams between words: a window seam inside a word can break it. The case that made a server
test flaky under load: with am_onyx, a listener 0.8 s ahead put the second seam 3 frames into the
drawn-out last word, and Whisper heard "booking" as "book, isn't it". Seams after the first now
move back to the last word boundary within ``snap_frames``; the same budget must give a plan whose
seams are all between words, and speech that Whisper hears right."""

from __future__ import annotations

import numpy as np

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.engine.decoding import FRAME_SAMPLES, WindowPolicy, decode_windows
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.normalize import normalize
from speakstream.engine.phonemes import windows
from speakstream.engine.windowed import Utterance, word_boundaries

TEXT = "Thanks for waiting, I found your booking."
VOICE = "am_onyx"


def _front(kokoro: KokoroEngine) -> Utterance:
    assert kokoro.windowed is not None
    part = windows(kokoro.phonemizer.phonemize(normalize(TEXT), kokoro.check_voice(VOICE).speaks))[0]
    return kokoro.windowed.front(part, kokoro.voice_bank, VOICE, 1.0, TEXT, None, kokoro.config.edges)


def _inside_a_word(u: Utterance, frame: int) -> str | None:
    t = (frame * FRAME_SAMPLES - u.head) / 24_000
    return next((w.word for w in u.words if w.start_s + 0.05 < t < w.end_s - 0.05), None)


def _budget_for_a_seam_inside_the_last_word(u: Utterance, policy: WindowPolicy) -> float:
    """The budget (frames) that, without snapping, ends the second window inside "booking"."""
    last = u.words[-1]
    first_end = u.head // FRAME_SAMPLES + policy.first_frames
    target = round((u.head + (last.start_s + 0.25) * 24_000) / FRAME_SAMPLES)
    return (target - first_end + 2 * policy.context_frames) / policy.safety + 0.5


def test_seams_after_the_first_fall_between_words(kokoro: KokoroEngine, asr: Recognizer) -> None:
    assert kokoro.windowed is not None
    model, u = kokoro.windowed, _front(kokoro)
    policy = model.policy
    budget = _budget_for_a_seam_inside_the_last_word(u, policy)
    start, stop = u.head // FRAME_SAMPLES, min(u.frames, -(-u.end // FRAME_SAMPLES))
    unsnapped = list(policy.windows(start, stop, budget=lambda: budget))
    assert _inside_a_word(u, unsnapped[1][1]) == "booking"  # the case: without snapping, a seam in the word
    plan = list(policy.windows(start, stop, budget=lambda: budget, boundaries=word_boundaries(u)))
    assert [_inside_a_word(u, b) for _, b in plan[1:-1]] == [None] * len(plan[1:-1])

    pieces = decode_windows(
        lambda s, e, phase: model.decode(u, s, e, phase, None),
        u.f0,
        u.frames,
        head=u.head,
        end=u.end,
        harmonics=model.harmonics,
        rate=model.rate,
        policy=policy,
        budget=lambda: budget,
        tail=u.tail,
        speech_end=u.speech_end,
        boundaries=word_boundaries(u),
    )
    samples = np.concatenate([p for p, _ in pieces])
    assert corpus_wer([(TEXT, asr.transcribe(samples, 24_000).text)]) == 0
