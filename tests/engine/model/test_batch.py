"""The batched decoder: windows of different sessions (voices, texts, sine phases) decoded in one
batch sound as each does alone (the bound measured in ``docs/design.md``: SNR 108 dB at the worst
of 36 windows, largest difference 1e-4), and a batching engine speaks the words."""

import threading

import numpy as np
import onnxruntime as ort
import pytest

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.engine.base import pieces
from speakstream.engine.config import EngineConfig
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.batch import batched_decoder
from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.types import SAMPLE_RATE

TEXTS = ("Thanks for waiting, I found your booking.", "Would you like me to send the receipt to your email?")
VOICES = ("af_heart", "am_michael", "bf_emma")
SNR_DB = 90.0
LARGEST = 1e-3


def windows(kokoro: KokoroEngine, frames: int) -> list[dict[str, np.ndarray]]:
    """One window of ``frames`` from each text in each voice, at different places and phases."""
    front = ort.InferenceSession(str(kokoro.assets.split("front")))
    rng, feeds = np.random.default_rng(7), []
    for text in TEXTS:
        tokens = kokoro.phonemizer.phonemize(text).tokens
        for voice in VOICES:
            style = kokoro.voice_bank.style(voice, len(tokens))
            _, *outputs = front.run(None, front_feed(tokens, style, 1.0))
            start = int(rng.integers(0, outputs[0].shape[2] - frames))
            phase = rng.uniform(0, 1, (1, 1, 9)).astype(np.float32)
            feeds.append(decoder_feed(outputs, style, phase, start, start + frames))
    return feeds


@pytest.mark.parametrize("frames", [24, 64])
def test_a_window_in_a_batch_sounds_as_it_does_alone(kokoro: KokoroEngine, frames: int) -> None:
    decoder = ort.InferenceSession(str(batched_decoder(kokoro.assets)))
    feeds = windows(kokoro, frames)
    alone = [decoder.run(["audio"], feed)[0][0] for feed in feeds]
    (together,) = decoder.run(["audio"], {name: np.concatenate([f[name] for f in feeds]) for name in feeds[0]})
    assert together.shape == (len(feeds), frames * 600)
    for row, one in zip(together, alone, strict=True):
        error = row - one
        assert 10 * np.log10(np.sum(one**2) / max(np.sum(error**2), 1e-30)) > SNR_DB
        assert np.abs(error).max() < LARGEST


def test_the_batched_decoder_is_made_once(kokoro: KokoroEngine) -> None:
    path = batched_decoder(kokoro.assets)
    made = path.stat().st_mtime_ns
    assert batched_decoder(kokoro.assets) == path and path.stat().st_mtime_ns == made


@pytest.mark.asr
def test_a_batching_engine_speaks_each_reply_of_a_crowd(kokoro: KokoroEngine, asr: Recognizer) -> None:
    engine = KokoroEngine(EngineConfig(batch=4))
    engine.warm()
    texts = [*TEXTS, "The train to Porto leaves at noon.", "Your table is booked for eight."]
    heard: list[str] = [""] * len(texts)

    def speak(i: int) -> None:
        stream = engine.stream_of(texts[i], VOICES[i % len(VOICES)], 1.0, None, opening=True)
        heard[i] = asr.transcribe(np.concatenate([p.samples for p in pieces(stream)]), SAMPLE_RATE).text

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert engine.runner is not None and engine.runner.batcher is not None
    assert sum(engine.runner.batcher.batches.values()) >= len(texts)  # every window went through it
    assert corpus_wer(list(zip(texts, heard, strict=True))) < 0.1
