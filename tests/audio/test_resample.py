import numpy as np

from speakstream.audio.resample import StreamResampler


def test_streaming_resample_matches_length_in_any_pieces() -> None:
    x = np.random.default_rng(1).standard_normal(24_000).astype(np.float32) * 0.1
    for piece in (1, 37, 2400, 24_000):
        r = StreamResampler(24_000, 16_000)
        out = np.concatenate([r.process(x[i : i + piece]) for i in range(0, len(x), piece)] + [r.flush()])
        assert abs(len(out) - 16_000) <= 2


def test_same_rate_is_a_pass_through() -> None:
    x = np.ones(10, np.float32)
    r = StreamResampler(24_000, 24_000)
    assert r.process(x) is x and len(r.flush()) == 0
