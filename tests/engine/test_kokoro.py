import asyncio
import dataclasses
import threading
import time
from typing import Any

import numpy as np
import pytest

from speakstream.bench.asr import Recognizer, corpus_wer, timestamp_agreement
from speakstream.engine.base import WARM_TEXT, CancelToken
from speakstream.engine.decoding import FRAME_SAMPLES
from speakstream.engine.kokoro import EngineConfig, KokoroEngine
from speakstream.engine.phonemes.phonemizer import MAX_TOKENS, windows
from speakstream.engine.windowed import NARROW_SLOWDOWN, ONSET_REACH_S, WARM_RUNS
from speakstream.engine.windows.edges import EdgePolicy, frame_db
from speakstream.errors import InvalidInput, UnknownVoice
from speakstream.types import SAMPLE_RATE, AudioPiece

pytestmark = pytest.mark.model

SENTENCES = [
    "Thanks for waiting, I found your booking.",
    "Your flight to Lisbon leaves tomorrow morning from gate twelve.",
    "I have moved your seat to an aisle near the front of the plane.",
    "Is there anything else you would like me to change for you?",
]


def test_audio_chunk_shape_and_words(kokoro: KokoroEngine) -> None:
    chunk = kokoro.synthesize(SENTENCES[0], voice="af_heart")
    assert chunk.sample_rate == SAMPLE_RATE == 24_000
    assert chunk.samples.dtype == np.float32 and chunk.samples.ndim == 1
    assert chunk.duration_s == pytest.approx(len(chunk.samples) / 24_000)
    assert 1.0 < chunk.duration_s < 5.0
    assert [w.word for w in chunk.words] == ["Thanks", "for", "waiting", "I", "found", "your", "booking"]
    starts = [w.start_s for w in chunk.words]
    assert starts == sorted(starts)
    assert all(0 <= w.start_s < w.end_s <= chunk.duration_s for w in chunk.words)
    assert chunk.timings.inference_s > 0 and chunk.timings.phonemize_s > 0


def test_durations_cover_the_audio_exactly(kokoro: KokoroEngine) -> None:
    text = "Hello there, how are you today?"
    part = windows(kokoro.phonemizer.phonemize(text))[0]
    assert kokoro.windowed is not None
    u = kokoro.windowed.front(part, kokoro.voice_bank, "af_heart", 1.0, text, None, EdgePolicy())
    audio = kokoro.windowed.decode(u, 0, u.frames, np.zeros((1, 1, 9), np.float32), None)
    assert u.frames * FRAME_SAMPLES == len(audio)  # the front's durations count the decoder's frames
    chunk = kokoro.synthesize(text, voice="af_heart")
    # the audio ends after the last word (by the durations), at most at the planned tail
    assert chunk.words[-1].end_s <= chunk.duration_s <= (u.end - u.head) / SAMPLE_RATE


def test_edge_silence_is_trimmed(kokoro: KokoroEngine) -> None:
    chunk = kokoro.synthesize("Hello there.", voice="af_heart")
    loud = np.flatnonzero(np.abs(chunk.samples) > 0.02)
    assert loud[0] / SAMPLE_RATE < 0.08  # speech starts within the lead pad
    assert (len(chunk.samples) - loud[-1]) / SAMPLE_RATE < 0.4  # and the tail is a short pause
    assert abs(chunk.samples[0]) < 0.01 and abs(chunk.samples[-1]) < 0.01  # faded: no click at a join


FIRST_SOUNDS = ["Five fish.", "Fine, thanks.", "So, what now?", "Hello there."]
"""Words that begin with a sound Kokoro's decoder starts well before the word's frames: cut at the
durations, Whisper heard "Bye fish", "Find thanks", "say what now" and "Below there"."""
ONSET_VOICES = ("af_heart", "am_michael", "bf_emma")


def test_a_chunk_keeps_the_start_of_its_first_sound(kokoro: KokoroEngine) -> None:
    assert kokoro.windowed is not None
    for voice in ONSET_VOICES:
        for text in [*FIRST_SOUNDS, "She sells sea shells."]:
            part = windows(kokoro.phonemizer.phonemize(text))[0]
            u = kokoro.windowed.front(part, kokoro.voice_bank, voice, 1.0, text, None, EdgePolicy())
            whole = frame_db(kokoro.windowed.decode(u, 0, u.frames, np.zeros((1, 1, 9), np.float32), None), SAMPLE_RATE)
            chunk = kokoro.synthesize(text, voice=voice)
            start = u.head + round((u.words[0].start_s - chunk.words[0].start_s) * SAMPLE_RATE)
            # nothing loud before the chunk's start (cut at the durations: 17 dB under the peak, median)
            assert whole[: start // 240].max() < -30, (voice, text)
            silence = np.flatnonzero(frame_db(chunk.samples, SAMPLE_RATE) > EdgePolicy().threshold_db)[0]
            assert silence <= 4, (voice, text)  # and it starts with its speech: the 20 ms lead, and some


@pytest.mark.asr
def test_the_first_word_of_a_chunk_is_heard(kokoro: KokoroEngine, asr: Recognizer) -> None:
    for voice in ONSET_VOICES:
        for text in FIRST_SOUNDS:
            heard = asr.transcribe(kokoro.synthesize(text, voice=voice).samples, SAMPLE_RATE).text
            assert _first_word_heard(text.split()[0], heard), (voice, heard)


@pytest.mark.slow
def test_all_54_voices_speak(kokoro: KokoroEngine) -> None:
    names = [v.name for v in kokoro.voices()]
    assert len(names) == 54
    for name in names:
        chunk = kokoro.synthesize("Hi.", voice=name)
        assert chunk.duration_s > 0.2 and np.abs(chunk.samples).max() > 0.05, name


def test_blends_and_speed(kokoro: KokoroEngine) -> None:
    blend = kokoro.synthesize(SENTENCES[0], voice="af_heart:0.7,af_bella:0.3")
    slow = kokoro.synthesize(SENTENCES[0], voice="af_heart", speed=0.5)
    fast = kokoro.synthesize(SENTENCES[0], voice="af_heart", speed=2.0)
    assert blend.duration_s > 1.0
    assert slow.duration_s > 1.6 * fast.duration_s


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"voice": "xx_nobody"}, "unknown_voice"),
        ({"voice": "af_heart:0.5,zz_who:0.5"}, "unknown_voice"),
        ({"voice": "af_heart:-1"}, "unknown_voice"),
        ({"voice": ""}, "unknown_voice"),
        ({"speed": 0.2}, "invalid_speed"),
        ({"speed": 2.5}, "invalid_speed"),
        ({"speed": float("nan")}, "invalid_speed"),
    ],
)
def test_bad_voice_or_speed_is_a_clear_error(kokoro: KokoroEngine, kwargs: dict[str, object], code: str) -> None:
    args = {"voice": "af_heart", "speed": 1.0, **kwargs}
    with pytest.raises(InvalidInput) as info:
        kokoro.synthesize("Hello.", **args)  # type: ignore[arg-type]
    assert info.value.code == code
    if code == "unknown_voice":
        assert isinstance(info.value, UnknownVoice)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_rejected(kokoro: KokoroEngine, text: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        kokoro.synthesize(text)


@pytest.mark.slow
@pytest.mark.asr
def test_text_over_the_token_window_is_split_not_truncated(kokoro: KokoroEngine, asr: Recognizer) -> None:
    text = " ".join(SENTENCES * 4)
    assert len(kokoro.phonemizer.phonemize(text).tokens) > MAX_TOKENS
    chunk = kokoro.synthesize(text, voice="af_heart")
    assert len(chunk.words) == sum(len(s.split()) for s in SENTENCES) * 4
    heard = asr.transcribe(chunk.samples, chunk.sample_rate)
    assert corpus_wer([(text, heard.text)]) <= 0.05
    assert heard.text.lower().rstrip("?. ").endswith("change for you")


@pytest.mark.asr
def test_speech_transcribes_back_for_three_voices(kokoro: KokoroEngine, asr: Recognizer) -> None:
    pairs = []
    for voice in ("af_heart", "am_michael", "bf_emma"):
        for text in SENTENCES:
            chunk = kokoro.synthesize(text, voice=voice)
            pairs.append((text, asr.transcribe(chunk.samples, chunk.sample_rate).text))
    assert corpus_wer(pairs) <= 0.05, pairs


@pytest.mark.asr
def test_word_timestamps_agree_with_whisper(kokoro: KokoroEngine, asr: Recognizer) -> None:
    chunk = kokoro.synthesize(" ".join(SENTENCES[:2]), voice="af_heart")
    agreement = timestamp_agreement(chunk.words, asr.transcribe(chunk.samples, chunk.sample_rate))
    assert agreement is not None and agreement < 0.15


def test_inference_off_the_event_loop_keeps_it_responsive(kokoro: KokoroEngine) -> None:
    async def scenario() -> float:
        gaps: list[float] = []

        async def tick() -> None:
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        started = time.perf_counter()
        try:
            await asyncio.to_thread(kokoro.synthesize, " ".join(SENTENCES), voice="af_heart")
        finally:
            synthesis_s = time.perf_counter() - started
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
        return max(gaps) / synthesis_s

    # a ratio, so a busy machine slows both sides: the loop's longest stall is a small part of the
    # synthesis it ran beside (seconds), never the whole of it as a blocking call would be
    assert asyncio.run(scenario()) < 0.2


def test_async_synthesis(kokoro: KokoroEngine) -> None:
    chunk = asyncio.run(kokoro.asynthesize("Hello from async code.", voice="af_sky"))
    assert chunk.duration_s > 0.5


def test_a_paused_window_is_run_again_and_comes_out_the_same(kokoro: KokoroEngine) -> None:
    """The scheduler pauses a running window for another reply's first window: ONNX Runtime stops
    the inference, and it runs again from the start once resumed, with the same audio."""
    assert kokoro.windowed is not None
    text = SENTENCES[1]
    part = windows(kokoro.phonemizer.phonemize(text))[0]
    u = kokoro.windowed.front(part, kokoro.voice_bank, "af_heart", 1.0, text, None, EdgePolicy())
    phase = np.zeros((1, 1, len(kokoro.windowed.harmonics)), np.float32)
    started = time.perf_counter()
    plain = kokoro.windowed.decode(u, 0, u.frames, phase, None)
    whole_s = time.perf_counter() - started
    token, result = CancelToken(), []
    worker = threading.Thread(target=lambda: result.append(kokoro.windowed.decode(u, 0, u.frames, phase, token)))
    worker.start()
    time.sleep(0.1)  # well inside the inference (about 1 s here)
    token.pause()
    time.sleep(1.5 * whole_s)
    assert worker.is_alive() and not result  # long enough to have finished: stopped, waiting for its turn
    token.resume()
    worker.join(30)
    assert len(result) == 1
    np.testing.assert_allclose(result[0], plain, atol=1e-5)


def _an_opening(samples: int, frames: int, later: int) -> bool:
    """Whether a first piece of ``samples`` came from an opening window of ``frames``: its end
    moved to a word gap up to ``later`` frames on, its start cut to its speech (``ONSET_REACH_S``)."""
    return (frames - 1) * FRAME_SAMPLES - ONSET_REACH_S * SAMPLE_RATE < samples <= (frames + later) * FRAME_SAMPLES


def test_the_window_opening_a_reply_is_sized_for_the_measured_decoder(kokoro: KokoroEngine) -> None:
    """The decoder's recent speed alone, never under the fastest it has been, sizes the opening
    window (``WindowPolicy.opening``): longer on a slow device, so the next windows are made in time."""
    model = kokoro.windowed
    assert model is not None
    text = "Your flight leaves tomorrow morning."
    kokoro.synthesize(text, voice="af_heart")  # one window of over 16 frames: a measurement
    measured, recent = model.device_frame_s, model.lone_frame_cost_s
    assert measured is not None and measured > 0
    assert model.opening_frame_s == max(measured, recent)
    later = model.policy.opening_snap_frames  # a word gap a little later (snap_opening)
    try:
        for frame_s, frames in ((0.0005, 16), (0.0103, 31)):
            model.device_frame_s = model.lone_frame_cost_s = frame_s
            first = next(iter(kokoro.stream(text, voice="af_heart")))
            assert _an_opening(len(first.samples), frames, later)
            assert model.device_frame_s is not None and model.device_frame_s <= frame_s  # measured again
        model.device_frame_s, model.lone_frame_cost_s = 0.005, 0.0103  # the machine slowed since its best
        assert model.opening_frame_s == 0.0103
    finally:
        model.device_frame_s, model.lone_frame_cost_s = measured, recent


def test_a_reply_opening_on_a_shared_decoder_is_sized_at_the_shared_speed(kokoro: KokoroEngine) -> None:
    """While other replies' windows run or are about to, the opening is sized at the speed the
    decoder has then (its narrow sessions'), and when that covers nothing it is the shortest:
    the listener's buffer runs dry between turns whatever the opening (``WindowPolicy.opening``)."""
    model = kokoro.windowed
    assert model is not None
    text = "Your flight leaves tomorrow morning from the second terminal."
    saved = model.device_frame_s, model.lone_frame_cost_s, model.shared_frame_cost_s, model.lanes.in_flight
    later = model.policy.opening_snap_frames
    try:
        model.device_frame_s = model.lone_frame_cost_s = 0.0103  # alone: 31 frames (as above)
        model.shared_frame_cost_s = None
        assert model.shared_frame_s == pytest.approx(0.0103 * NARROW_SLOWDOWN)  # guessed until one is measured
        model.lanes.in_flight = lambda: 2  # the scheduler is starting another reply's window
        first = next(iter(kokoro.stream(text, voice="af_heart")))
        frames = model.policy.first_frames
        assert _an_opening(len(first.samples), frames, later)
        assert model.shared_frame_cost_s is not None  # it ran on a narrow session, and was measured
        model.shared_frame_cost_s = 0.0005  # a shared decoder fast enough: no shorter than alone's
        assert model.opening_frames(model.policy) == model.policy.opening(0.0005) == frames
        model.shared_frame_cost_s = 0.0103
        assert model.opening_frames(model.policy) == 31
        model.shared_frame_cost_s = 0.05
        assert model.opening_frames(model.policy) == frames
        assert model.opening_frames(dataclasses.replace(model.policy, shared_opening=False)) == 31  # as alone
        model.lanes.in_flight = None
        assert model.opening_frames(model.policy) == 31  # alone again: the lone speed sizes it
    finally:
        model.device_frame_s, model.lone_frame_cost_s, model.shared_frame_cost_s, model.lanes.in_flight = saved


def test_the_first_word_is_heard_whatever_the_opening_window(
    kokoro: KokoroEngine, asr: Recognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening's size follows the decoder's measured speed (and ``crowded``): its first word
    must be heard at each. With 1 frame of context before the window, "Sure," was heard as "So"
    at 14, 16 and 20 frames. The window's size and context are what is tested here, on the
    ``mixed`` decoder: the ``int8`` one that crowded openings get is tested against it below (at
    8 frames this one sentence is heard "So our here..." on it)."""
    model = kokoro.windowed
    assert model is not None
    monkeypatch.setattr(model, "crowded_sessions", None)
    saved, text = model.policy, "Sure, here is the next part."
    try:
        for frames in (8, 10, 14, 16, 20, 24):
            model.policy = dataclasses.replace(saved, crowded_frames=frames, first_frames=min(frames, 16))
            audio = np.concatenate([p.samples for p in kokoro.stream(text, voice="af_heart", crowded=lambda: True)])
            heard = asr.transcribe(audio, SAMPLE_RATE).text
            assert _first_word_heard("Sure", heard), (frames, heard)
    finally:
        model.policy = saved


CROWDED_FIRST_WORDS = [*FIRST_SOUNDS, "Sure, here is the next part.", "Sure thing, one moment."]


def test_a_crowded_opening_on_the_int8_decoder_loses_no_more_first_words_than_on_the_mixed_one(
    kokoro: KokoroEngine, asr: Recognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An 8-frame crowded opening's first word, heard by Whisper, with the opening window on each
    decoder. Both lose some (the words of ``FIRST_SOUNDS`` begin with sounds that are hard to hear
    in a short window), and not the same ones: over 180 such openings (5 voices, 12 sentences,
    8, 10 and 14 frames) the int8 decoder lost 13 and the mixed one 12 (``python
    scripts/crowded_decoder.py --first-words``)."""
    model = kokoro.windowed
    assert model is not None and model.crowded_sessions is not None
    int8 = model.crowded_sessions
    lost: dict[str, int] = {"mixed": 0, "int8": 0}
    for decoder in lost:
        monkeypatch.setattr(model, "crowded_sessions", int8 if decoder == "int8" else None)
        for voice in ONSET_VOICES:
            for text in CROWDED_FIRST_WORDS:
                audio = np.concatenate([p.samples for p in kokoro.stream(text, voice=voice, crowded=lambda: True)])
                heard = asr.transcribe(audio, SAMPLE_RATE).text
                first = text.split()[0].strip(",.")
                lost[decoder] += not _first_word_heard(first, heard)
    assert lost["int8"] <= lost["mixed"] + 1, lost


def test_an_opening_that_would_end_inside_a_word_ends_after_it(kokoro: KokoroEngine, asr: Recognizer) -> None:
    """With 4 frames of reach (``opening_snap_frames``), the 16-frame opening of this sentence ended
    inside "flight" in these two voices, and Whisper heard "Your flaktor Lisbon" / "Your Flakter
    Lisbon": the opening has only ``opening_context_frames`` after it."""
    model = kokoro.windowed
    assert model is not None
    text = "Your flight to Lisbon leaves tomorrow morning from gate twelve."
    saved = model.device_frame_s, model.lone_frame_cost_s
    try:
        for voice in ("bf_emma", "bm_george"):
            model.device_frame_s = model.lone_frame_cost_s = 0.0005  # a fast decoder: a 16-frame opening
            audio = np.concatenate([p.samples for p in kokoro.stream(text, voice=voice)])
            heard = asr.transcribe(audio, SAMPLE_RATE).text
            assert "flight to lisbon" in heard.lower(), (voice, heard)
    finally:
        model.device_frame_s, model.lone_frame_cost_s = saved


def test_a_crowded_reply_opens_with_the_shortest_window_and_sounds_the_same(
    kokoro: KokoroEngine, asr: Recognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More listeners wait for first audio than the lanes (the scheduler's ``crowded``): the
    opening window is ``crowded_frames``, never longer than it would be, decoded by the int8
    decoder (``EngineConfig.crowded_decoder``), and the reply is heard as well as when it is not
    crowded."""
    model = kokoro.windowed
    assert model is not None and model.crowded_sessions is not None
    policy, later = model.policy, model.policy.crowded_snap_frames
    assert model.opening_frames(policy, crowded=True) == policy.crowded_frames < policy.first_frames
    roomy = dataclasses.replace(policy, crowded_frames=1 << 30)
    assert model.opening_frames(roomy, crowded=True) == model.opening_frames(roomy)
    heard: dict[bool, list[tuple[str, str]]] = {True: [], False: []}
    decoders: list[object] = []
    decode = model.decode

    def recorded(*args: Any, sessions: Any = None) -> Any:
        decoders.append(sessions)
        return decode(*args, sessions=sessions)

    monkeypatch.setattr(model, "decode", recorded)
    for voice in ONSET_VOICES:
        for text in [*FIRST_SOUNDS, SENTENCES[1]]:
            for crowded in (True, False):
                decoders.clear()
                pieces = list(kokoro.stream(text, voice=voice, crowded=(lambda: True) if crowded else None))
                # a crowded opening runs on the int8 decoder (``crowded_sessions``), the rest on the mixed one
                assert decoders == [model.crowded_sessions if crowded else None] + [None] * (len(decoders) - 1)
                if crowded:
                    assert _an_opening(len(pieces[0].samples), policy.crowded_frames, later) or len(pieces) == 1
                audio = np.concatenate([p.samples for p in pieces])
                heard[crowded].append((text, asr.transcribe(audio, SAMPLE_RATE).text))
    assert corpus_wer(heard[True]) <= corpus_wer(heard[False]) + 0.01, heard


def test_crowding_is_asked_once_as_a_replys_opening_window_is_sized(kokoro: KokoroEngine) -> None:
    """The scheduler's answer is wanted as late as it can be, when the opening window is sized
    (after the chunk's front, so replies that came meanwhile count), and only for a reply's
    opening: a later chunk's listener is already hearing it."""
    asked: list[int] = []

    def crowded() -> bool:
        asked.append(len(pieces))
        return True

    pieces: list[AudioPiece] = []
    for piece in kokoro.stream("Thanks for waiting, here it is.", voice="af_heart", crowded=crowded):
        pieces.append(piece)
    assert asked == [0]  # before the first piece, once
    list(kokoro.stream("And one more thing.", voice="af_heart", opening=False, crowded=crowded))
    assert asked == [0]


def test_a_pieces_time_is_its_own_not_its_wait_for_a_turn(
    kokoro: KokoroEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece's ``inference_s`` is the engine's time on it. Between two windows a reply waits for
    its next turn while other sessions' windows run: that wait is not its inference time (the
    server's real-time-factor and engine-seconds metrics and a reply's stats add these up)."""
    real, waited = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + waited[0])
    pieces = []
    for piece in kokoro.stream(SENTENCES[1], voice="af_heart"):
        pieces.append(piece)
        waited[0] += 100.0  # other sessions' windows, before this reply's next turn
    assert len(pieces) >= 2
    assert all(0.0 < piece.timings.inference_s < 100.0 for piece in pieces)


def test_a_pieces_time_leaves_out_a_pause_for_another_replys_first_window(
    kokoro: KokoroEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler pauses a reply for another reply's first window: the time it then waits for
    its turn (``CancelToken.waited_s``) is not its inference time either."""
    real, paused = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + paused[0])
    token = CancelToken()

    def other_reply_first_window() -> None:
        time.sleep(0.5)  # the paused reply is waiting for its turn by now
        paused[0] += 100.0
        token.resume()

    pieces = kokoro.stream(SENTENCES[1], voice="af_heart", cancel=token)
    first = next(pieces)
    token.pause()
    resumer = threading.Thread(target=other_reply_first_window)
    resumer.start()
    second = next(pieces)
    resumer.join(5)
    assert token.waited_s >= 100.0
    assert all(0.0 < piece.timings.inference_s < 100.0 for piece in (first, second))


def test_a_whole_chunks_time_leaves_out_a_pause_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on a whole graph (no windows: one inference per chunk), paused before it starts."""
    engine = KokoroEngine(EngineConfig(graph="timed", parallel=1))
    real, paused = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + paused[0])
    token = CancelToken()

    def other_reply_first_window() -> None:
        time.sleep(0.5)  # the chunk is waiting for its turn by now
        paused[0] += 100.0
        token.resume()

    token.pause()
    resumer = threading.Thread(target=other_reply_first_window)
    resumer.start()
    chunk = engine.synthesize(SENTENCES[0], voice="af_heart", cancel=token)
    resumer.join(5)
    assert token.waited_s >= 100.0
    assert 0.0 < chunk.timings.inference_s < 100.0


def test_a_lone_reply_on_a_slowed_decoder_gets_windows_that_keep_up(kokoro: KokoroEngine) -> None:
    """With nothing buffered, the window after the opening one is the smallest (``first_frames``) on a
    fast decoder, and the largest on one measured slower than real time (``ListenerBudget``),
    where 32 frames and their context would cost more than they play; the audio is the same
    length either way. (The measured speed moves toward the real one after each window, by 30%:
    1.2 times real time stays over 0.84 after the opening window, still slow enough for the
    largest; near real time the window would hang on this machine's speed, so the unit tests
    check that rule.)"""
    model = kokoro.windowed
    assert model is not None
    text = "Your flight to Lisbon leaves tomorrow morning at nine, and the hotel has a room for you on the third floor."
    saved = model.frame_cost_s, model.lone_frame_cost_s
    frames: dict[float, list[int]] = {}
    try:
        for frame_s in (0.005, 0.03):  # seconds a decoded frame: RTF 0.2 and 1.2
            model.frame_cost_s = model.lone_frame_cost_s = frame_s
            pieces = list(kokoro.stream(text, voice="af_heart", ahead=lambda: 0.0))
            frames[frame_s] = [round(len(p.samples) / FRAME_SAMPLES) for p in pieces]
    finally:
        model.frame_cost_s, model.lone_frame_cost_s = saved
    fast, slow = frames[0.005], frames[0.03]
    policy = model.policy
    assert len(fast) > 2 and fast[1] <= policy.min_frames + policy.snap_ahead_frames
    assert slow[1] >= min(policy.max_frames - policy.snap_frames, sum(slow[1:]))  # the largest, or all the rest
    assert abs(sum(fast) - sum(slow)) <= 2


def test_two_inferences_at_once_share_the_cores_and_say_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``parallel=2`` an inference that starts while another runs takes a narrow (one thread here)
    copy of the model, and what it makes is what the model makes alone (to float rounding)."""
    from speakstream.engine import inference
    from speakstream.engine.kokoro import EngineConfig

    engine = KokoroEngine(EngineConfig(parallel=2))
    assert engine.windowed is not None
    narrow = engine.windowed.decoder_sessions.narrow
    assert len(narrow) == 2 and len(engine.windowed.front_sessions.narrow) == 2
    alone = [engine.synthesize(text).samples for text in SENTENCES[:2]]
    lent: list[bool] = []
    lend = inference.Lanes.lend

    def recording(self: inference.Lanes, wide: object, free: list[object]) -> object:
        lent.append(bool(self.running and free))  # a narrow copy is lent
        return lend(self, wide, free)

    monkeypatch.setattr(inference.Lanes, "lend", recording)
    together: list[np.ndarray] = [np.zeros(0)] * 2
    start = threading.Barrier(2)

    def speak(i: int) -> None:
        start.wait()
        for _ in range(2):
            together[i] = engine.synthesize(SENTENCES[i]).samples

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert any(lent) and engine.windowed.lanes.running == 0
    for mine, theirs in zip(together, alone, strict=True):
        assert len(mine) == len(theirs)
        assert np.abs(mine - theirs).max() < 1e-3


def test_a_long_window_alone_is_decoded_as_two_halves_at_once_and_says_the_same(
    kokoro: KokoroEngine, asr: Recognizer
) -> None:
    """With two narrow lanes and nothing else running, a window of ``split_frames`` or more is
    decoded as two halves at once (``WindowedModel.decode_pair``), and may be twice the largest
    window; the speech is as long as without pairs and Whisper hears it right. While another
    reply has work (the scheduler's count), none is."""
    model = kokoro.windowed
    assert model is not None
    if not model.pairs_possible:
        pytest.skip("pairs need two narrow lanes (a CPU with 2 cores or more)")
    text = " ".join(SENTENCES[1:] * 2)  # one chunk of about 18 s: the windows grow to 2 x 160 frames
    before = model.paired_windows
    paired = list(kokoro.stream(text, voice="af_heart"))
    made = model.paired_windows - before
    policy = model.policy
    model.replies = lambda: 2  # another reply waits for its next window: no pairs
    try:
        single = list(kokoro.stream(text, voice="af_heart"))
    finally:
        model.replies = None
    assert model.paired_windows == before + made and made >= 1
    sizes = [round(len(p.samples) / FRAME_SAMPLES) for p in paired]
    longest = policy.max_frames + policy.shortest  # a seam moved forward, or a sliver left at the end absorbed
    assert max(sizes) > longest  # two halves of up to the largest window each
    assert max(round(len(p.samples) / FRAME_SAMPLES) for p in single) <= longest
    assert sum(len(p.samples) for p in paired) == sum(len(p.samples) for p in single)
    assert model.lanes.running == 0 and len(model.decoder_sessions.narrow) == 2
    heard = asr.transcribe(np.concatenate([p.samples for p in paired]), SAMPLE_RATE).text
    assert corpus_wer([(text, heard)]) <= 0.05


def _first_word_heard(word: str, heard: str) -> bool:
    """Whisper's first word of ``heard`` is ``word`` (as the word error rate compares them)."""
    return corpus_wer([(word, heard.split()[0] if heard else "")]) == 0


def test_warming_runs_every_session_of_every_part_on_a_whole_reply(
    kokoro: KokoroEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's first runs take up to twice as long (``WARM_RUNS``): ``warm`` runs each one,
    the narrow copies and the crowded decoder's included, on the whole reply it speaks, so the
    first burst of listeners after start-up does not pay for them."""
    model = kokoro.windowed
    assert model is not None and model.crowded_sessions is not None
    runs: dict[int, list[int]] = {}

    class Counted:
        def __init__(self, session: Any) -> None:
            self.session = session

        def run(self, outputs: Any, feed: dict[str, Any]) -> Any:
            runs.setdefault(id(self), []).append(next(iter(feed.values())).shape[-1])
            return self.session.run(outputs, feed)

    parts = (model.front_sessions, model.decoder_sessions, model.crowded_sessions)
    counted = {id(part): tuple(Counted(s) for s in part.every) for part in parts}
    for part in parts:
        monkeypatch.setattr(part, "every", counted[id(part)])
    monkeypatch.setattr(model, "warmed", False)
    kokoro.warm("af_heart")
    kokoro.warm("af_heart")  # once per model
    frames = model.front(
        kokoro.parts(WARM_TEXT, kokoro.check_voice("af_heart").speaks)[0],
        kokoro.voice_bank,
        "af_heart",
        1.0,
        WARM_TEXT,
        None,
        kokoro.config.edges,
    ).frames
    for part in parts:
        assert len(part.every) == 1 + kokoro.windowed.narrow_count
        for session in counted[id(part)]:
            sizes = runs[id(session)]
            assert len(sizes) == WARM_RUNS
            if part is not model.front_sessions:  # the decoders ran on every frame of it
                assert sizes == [frames] * WARM_RUNS
