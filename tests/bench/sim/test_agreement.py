"""The simulator against the real engine: calibrated on it, then the same bursts simulated and run
for real, side by side (``speakstream sim compare`` runs the whole set; this, a short one)."""

from __future__ import annotations

import pytest

from speakstream.bench.sim.agreement import compare
from speakstream.bench.sim.burst import Burst
from speakstream.engine.kokoro import KokoroEngine

pytestmark = [pytest.mark.slow, pytest.mark.full]  # 100-150 s on the real engine: `make test-full`


def test_a_calibrated_simulation_hears_what_the_real_engine_makes_heard(kokoro: KokoroEngine) -> None:
    cost, pairs = compare(kokoro, (Burst(1), Burst(2, "staggered")), runs=1)
    assert cost.frame_wide_s > 0 and cost.frame_narrow_s > 0 and cost.frames_per_char > 1
    for pair in pairs:
        real, simulated = pair.real.played, pair.simulated.played
        assert len(real) == len(simulated) and real
        assert sum(p.audio_s for p in simulated) == pytest.approx(sum(p.audio_s for p in real), rel=0.25)
        # looser than ``FIRST_AUDIO_TOLERANCE``: one run of each, on a machine that drifts
        assert max(pair.simulated.first_audio_s()) == pytest.approx(max(pair.real.first_audio_s()), rel=0.5)
