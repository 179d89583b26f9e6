"""The audio cache: a bounded LRU by bytes, and the scheduler answering a repeat from it with no
engine time, in its turn."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speakstream.engine.fake import FakeEngine
from speakstream.scheduler import Job, PlaybackClock, Scheduler
from speakstream.scheduler.cache import LARGEST_SHARE, AudioCache
from speakstream.types import AudioPiece, SynthesisTimings, WordTimestamp


def _pieces(seconds: float, words: tuple[WordTimestamp, ...] = ()) -> list[AudioPiece]:
    """A chunk of ``seconds`` in two pieces."""
    samples = np.linspace(-0.5, 0.5, int(seconds * 24_000), dtype=np.float32)
    half = len(samples) // 2
    timings = SynthesisTimings(0.01, 0.2)
    return [
        AudioPiece(samples[:half], 0, 0.0, seconds, words, False, timings),
        AudioPiece(samples[half:], 1, half / 24_000, seconds, (), True, timings),
    ]


def test_a_whole_chunk_is_answered_as_one_piece_with_its_words_and_no_engine_time() -> None:
    cache = AudioCache(10 << 20)
    words = (WordTimestamp("hello", 0.0, 0.4),)
    made = _pieces(1.0, words)
    assert cache.get("hello") is None
    assert cache.put("hello", made)
    piece = cache.get("hello")
    assert piece is not None and piece.last and piece.index == 0 and piece.words == words
    np.testing.assert_array_equal(piece.samples, np.concatenate([p.samples for p in made]))
    assert piece.timings == SynthesisTimings() and piece.chunk_duration_s == pytest.approx(1.0)
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.bytes) == (1, 1, 1, piece.samples.nbytes)


def test_an_unfinished_chunk_or_one_too_large_is_not_kept() -> None:
    cache = AudioCache(1 << 20)
    assert not cache.put("half", _pieces(1.0)[:1])
    too_long = (cache.max_bytes // LARGEST_SHARE) / 4 / 24_000 + 0.1  # seconds of float32 samples
    assert not cache.put("long", _pieces(too_long))
    assert cache.stats().entries == 0


def test_the_least_recently_used_chunk_goes_first() -> None:
    one = _pieces(1.0)[0].samples.nbytes * 2  # a one-second chunk's bytes
    cache = AudioCache(one * 8 + 10)
    for key in "abcdefgh":
        assert cache.put(key, _pieces(1.0))
    assert cache.get("a") is not None  # "a" is used again: "b" is the oldest now
    cache.put("i", _pieces(1.0))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("i") is not None


@given(seconds=st.lists(st.floats(0.05, 2.0), min_size=1, max_size=60), bound_s=st.floats(1.0, 20.0))
def test_a_flood_of_distinct_texts_never_holds_more_than_the_bound(seconds: list[float], bound_s: float) -> None:
    cache = AudioCache(int(bound_s * 24_000 * 4))
    for i, length in enumerate(seconds):
        cache.put(f"text {i}", _pieces(length))
        stats = cache.stats()
        assert stats.bytes <= stats.max_bytes
        assert stats.bytes == sum(p.samples.nbytes for p in _kept(cache))


def _kept(cache: AudioCache) -> list[AudioPiece]:
    return list(cache._entries.values())


def _submit(scheduler: Scheduler, session: str, index: int, text: str, **kwargs: object) -> Job:
    return scheduler.submit(session, f"{session}-r", index, text, voice="af_heart", speed=1.0, **kwargs)  # type: ignore[arg-type]


async def _taken(job: Job) -> list[AudioPiece]:
    return [p async for p in job.stream()]


async def test_a_repeat_is_answered_from_the_cache_with_no_engine_time() -> None:
    engine = FakeEngine(seconds_per_char=0.001)
    scheduler = Scheduler(engine, cache=AudioCache(16 << 20))
    await scheduler.start()
    try:
        made = await asyncio.wait_for(_taken(_submit(scheduler, "a", 0, "One moment, please.")), 10)
        clock = PlaybackClock()
        again = _submit(scheduler, "b", 0, "One moment, please.", clock=clock)
        assert again.cached is not None and again.ended  # answered at once: first in its session's line
        answered = await asyncio.wait_for(_taken(again), 10)
        other_voice = scheduler.submit("c", "c-r", 0, "One moment, please.", voice="am_adam", speed=1.0)
        other_speed = scheduler.submit("d", "d-r", 0, "One moment, please.", voice="af_heart", speed=1.5)
        await asyncio.wait_for(asyncio.gather(_taken(other_voice), _taken(other_speed)), 10)
    finally:
        await scheduler.stop()
    assert engine.calls == ["One moment, please."] * 3  # the repeat made nothing; the other voice and speed did
    assert len(answered) == 1 and answered[0].timings == SynthesisTimings()
    np.testing.assert_array_equal(answered[0].samples, np.concatenate([p.samples for p in made]))
    assert answered[0].words == made[0].words
    assert clock.audio_s == pytest.approx(answered[0].duration_s)  # the listener's clock counts it
    stats = scheduler.cache.stats() if scheduler.cache else None
    assert stats is not None and stats.hits == 1 and stats.misses == 3


async def test_a_cached_chunk_waits_for_the_chunk_before_it_in_its_session() -> None:
    """A session's chunks keep their order: a cached second chunk is answered once the first is
    done, so its listener's clock counts it after the first one's audio."""
    engine = FakeEngine(seconds_per_char=0.01)
    scheduler = Scheduler(engine, cache=AudioCache(16 << 20))
    await scheduler.start()
    try:
        await asyncio.wait_for(_taken(_submit(scheduler, "warm", 0, "Thanks.")), 10)
        first = _submit(scheduler, "a", 0, "Here is your booking.")
        second = _submit(scheduler, "a", 1, "Thanks.")
        assert second.cached is not None and not second.ended  # not yet: the first is not done
        await asyncio.wait_for(_taken(first), 10)
        assert second.ended
        assert len(await asyncio.wait_for(_taken(second), 10)) == 1
    finally:
        await scheduler.stop()


async def test_without_a_cache_every_chunk_is_made() -> None:
    engine = FakeEngine()
    scheduler = Scheduler(engine)
    await scheduler.start()
    try:
        for session in "ab":
            await asyncio.wait_for(_taken(_submit(scheduler, session, 0, "Hello.")), 10)
    finally:
        await scheduler.stop()
    assert engine.calls == ["Hello.", "Hello."]


async def test_a_cancelled_chunk_is_not_kept() -> None:
    engine = FakeEngine(seconds_per_char=0.05)
    scheduler = Scheduler(engine, cache=AudioCache(16 << 20))
    await scheduler.start()
    try:
        job = _submit(scheduler, "a", 0, "A long sentence that is cancelled midway.")
        while not job.running:
            await asyncio.sleep(0.005)
        scheduler.cancel("a")
        with pytest.raises(Exception, match="cancelled"):
            await asyncio.wait_for(_taken(job), 10)
    finally:
        await scheduler.stop()
    assert scheduler.cache is not None and scheduler.cache.stats().entries == 0
