import numpy as np
import pytest

from speakstream.engine.windows.edges import EdgePolicy, trim_onset

RATE = 24_000


def _speech_after(silence: int, total: int = RATE // 2) -> np.ndarray:
    """A 200 Hz tone after ``silence`` samples of quiet."""
    samples = np.zeros(total, np.float32)
    t = np.arange(total - silence) / RATE
    samples[silence:] = 0.5 * np.sin(2 * np.pi * 200 * t)
    return samples


def test_a_first_piece_is_cut_to_the_lead_before_its_speech_and_faded_in() -> None:
    policy = EdgePolicy()
    samples = _speech_after(4_800)
    out, cut = trim_onset(samples, RATE, policy, latest=RATE)
    assert cut == 4_800 - int(policy.lead_s * RATE)
    np.testing.assert_array_equal(out[-100:], samples[-100:])
    assert len(out) == len(samples) - cut
    fade = int(policy.fade_s * RATE)
    assert out[0] == 0.0 and np.all(np.abs(out[:fade]) <= np.abs(samples[cut : cut + fade]))


def test_it_is_never_cut_past_the_latest_start() -> None:
    out, cut = trim_onset(_speech_after(4_800), RATE, EdgePolicy(), latest=1_000)
    assert cut == 1_000 and len(out) == RATE // 2 - 1_000


@pytest.mark.parametrize("samples", [_speech_after(0), np.zeros(RATE // 2, np.float32)])
def test_speech_from_the_start_or_none_at_all_is_left_alone(samples: np.ndarray) -> None:
    out, cut = trim_onset(samples, RATE, EdgePolicy(), latest=RATE)
    assert cut == 0 and out is samples


def test_a_faint_start_counts_as_speech() -> None:
    samples = _speech_after(4_800)
    samples[2_400:4_800] = 0.005  # 40 dB under the tone: the start of a fricative, not silence
    _, cut = trim_onset(samples, RATE, EdgePolicy(), latest=RATE)
    assert cut == 2_400 - int(EdgePolicy().lead_s * RATE)
