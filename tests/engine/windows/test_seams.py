"""Seams between words: a window seam inside a word can break it. The cases that made a server
test flaky under load, both with am_onyx: a listener 0.8 s ahead put the second seam 3 frames into
the drawn-out last word, and Whisper heard "booking" as "book, isn't it"; and a later chunk's first
window, sized by its budget, ended 12 frames into it ("book in"): the boundary before the word was
under the budget's least from the window's start, so it did not move there. Seams after the first
now move to a word boundary; the same budget must give a plan whose seams are all between words,
and speech that Whisper hears right."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.front import Utterance, word_boundaries
from speakstream.engine.windows.planner import FRAME_SAMPLES, Chunk, Situation, plan_window
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.stream import UtteranceWindows
from speakstream.types import Load

VOICE = "am_onyx"
CASES = [
    pytest.param("Thanks for waiting, I found your booking.", True, 0.25, id="opening-chunk-second-seam"),
    pytest.param("I found your booking.", False, 0.3, id="later-chunk-first-seam"),
]
UNIT = Speed(1.0, 1.0)
"""One second a frame: a buffer of n seconds is a budget of n frames."""


def _front(kokoro: KokoroEngine, text: str) -> Utterance:
    assert kokoro.runner is not None
    part = kokoro.phoneme_windows(text, kokoro.check_voice(VOICE).speaks)[0]
    style = kokoro.voice_bank.style(VOICE, len(part.tokens))
    return kokoro.runner.front(part, style, 1.0, text, None, edges=kokoro.edges)


def _inside_a_word(u: Utterance, frame: int) -> str | None:
    t = (frame * FRAME_SAMPLES - u.head) / 24_000
    return next((w.word for w in u.words if w.start_s + 0.05 < t < w.end_s - 0.05), None)


def _budget_for_a_seam_inside_the_last_word(u: Utterance, policy: WindowPolicy, opening: bool, into: float) -> float:
    """The budget (frames) that, without snapping, ends the window sized by it ``into`` seconds
    into "booking" (the second window of an opening chunk, the first of a later one)."""
    start = u.first_frame + (policy.opening.least_frames if opening else 0)
    target = round((u.head + (u.words[-1].start_s + into) * 24_000) / FRAME_SAMPLES)
    return (target - start + 2 * policy.seams.context_frames) / policy.budget.share + 0.5


def _seams(policy: WindowPolicy, u: Utterance, opening: bool, budget: float, boundaries: tuple[int, ...]) -> list[int]:
    """Where each window planned with ``budget`` frames ends."""
    chunk = Chunk(u.first_frame, u.stop_frame, u.frames, boundaries, opens_reply=opening)
    now = Situation(UNIT, Load(), budget)
    ends, start, previous = [], chunk.first, 0
    while start < chunk.stop:
        plan = plan_window(policy, chunk, len(ends), start, previous, now)
        ends.append(plan.end)
        start, previous = plan.end, plan.planned
    return ends


@pytest.mark.parametrize(("text", "opening", "into"), CASES)
def test_seams_after_the_first_fall_between_words(
    kokoro: KokoroEngine, asr: Recognizer, text: str, opening: bool, into: float
) -> None:
    assert kokoro.runner is not None
    u = _front(kokoro, text)
    # budgets as given, in frames: no sustain, and every window in one piece, as the case was
    policy = dataclasses.replace(
        kokoro.policy,
        budget=dataclasses.replace(kokoro.policy.budget, sustain=0.0),
        split=dataclasses.replace(kokoro.policy.split, frames=0),
    )
    budget = _budget_for_a_seam_inside_the_last_word(u, policy, opening, into)
    sized = 1 if opening else 0  # the window the budget sizes
    unsnapped = _seams(policy, u, opening, budget, ())
    assert _inside_a_word(u, unsnapped[sized]) == "booking"  # the case: without snapping, a seam in the word
    snapped = _seams(policy, u, opening, budget, word_boundaries(u))
    assert [_inside_a_word(u, b) for b in snapped[sized:-1]] == [None] * len(snapped[sized:-1])

    windows = UtteranceWindows(kokoro.runner, policy, u, opens_reply=opening, edges=kokoro.edges)
    pieces = []
    while not windows.done:
        samples, _ = windows.next(Load(buffered_s=budget), None, speed=UNIT)
        pieces.append(samples)
    assert corpus_wer([(text, asr.transcribe(np.concatenate(pieces), 24_000).text)]) == 0
