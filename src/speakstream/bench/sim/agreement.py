"""The simulator against the real engine on the same bursts, and the real engine at the issue's
load levels under two policies, run by run in one process so both meet the same machine speed."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from speakstream.bench.sim.burst import Burst, BurstResult, run_burst, simulate_burst
from speakstream.bench.sim.calibrate import calibrate
from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.sweep import load_levels
from speakstream.config import ServerConfig
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.policy import WindowPolicy

BURSTS = (
    Burst(1),
    Burst(2),
    Burst(4),
    Burst(4, "random", seed=1),
    Burst(4, "staggered"),
    Burst(2, tokens_per_s=60.0),
    Burst(4, "random", tokens_per_s=60.0, seed=2),
)
"""The bursts the simulator is checked on: together, random, staggered, whole and at 60 tokens/s."""
FIRST_AUDIO_TOLERANCE = 0.35
"""Simulated p95 first audio within this share of the real (measured: see ``docs/design.md``)."""
GAP_TOLERANCE_S = 0.3
"""Simulated worst gap within this of the real."""


@dataclass(frozen=True, slots=True)
class Pair:
    burst: Burst
    simulated: BurstResult
    real: BurstResult

    def agrees(self) -> bool:
        sim, real = _p95(self.simulated.first_audio_s()), _p95(self.real.first_audio_s())
        gaps = abs(max(self.simulated.gaps_s(), default=0.0) - max(self.real.gaps_s(), default=0.0))
        return abs(sim - real) <= FIRST_AUDIO_TOLERANCE * real and gaps <= GAP_TOLERANCE_S


def compare(engine: KokoroEngine, bursts: Sequence[Burst] = BURSTS, runs: int = 3) -> tuple[CostModel, list[Pair]]:
    """Calibrate on ``engine``, then each burst simulated and run for real, side by side."""
    cost = calibrate(engine, runs)
    pairs = [Pair(b, simulate_burst(cost, b), asyncio.run(run_burst(engine, b))) for b in bursts]
    return cost, pairs


def pair_row(pair: Pair) -> list[object]:
    b, sim, real = pair.burst, pair.simulated, pair.real
    pace = "whole" if b.tokens_per_s is None else f"{b.tokens_per_s:g} tok/s"
    return [
        f"{b.sessions} {b.arrival}, {pace}",
        f"{len(sim.played)} / {len(real.played)}",
        f"{_ms(max(sim.gaps_s(), default=0.0))} / {_ms(max(real.gaps_s(), default=0.0))}",
        f"{_ms(_p95(sim.first_audio_s()))} / {_ms(_p95(real.first_audio_s()))}",
        "yes" if pair.agrees() else "no",
    ]


PAIR_HEADERS = ("burst", "admitted sim / real", "worst gap ms", "p95 first audio ms", "within tolerance")


def old_windows(engine: KokoroEngine) -> KokoroEngine:
    """The engine configured with the windows before the simulator's sweep: none held to another
    listener's buffer, no opening held (the first-window rule before it is ``Priority.beside`` false)."""
    policy = unheld(engine.policy)
    return engine.configured(replace(policy, budget=replace(policy.budget, others_share=float("inf"))))


def unheld(policy: WindowPolicy) -> WindowPolicy:
    """``policy`` with no start-up buffer: every opening sent as soon as it is made."""
    return replace(policy, opening=replace(policy.opening, start_buffer_s=0.0))


ARMS = ("new", "unheld", "old")
"""The policies ``levels`` compares: the defaults, the defaults with no opening held, and the
windows and first-window rule before the simulator's sweep."""


@dataclass(frozen=True, slots=True)
class Level:
    name: str
    policy: str
    result: BurstResult
    one_first_audio_s: float

    def row(self) -> list[object]:
        r, firsts = self.result, self.result.first_audio_s()
        ratio = _p95(firsts) / self.one_first_audio_s if firsts else 0.0
        gapped = sum(g > 0 for g in r.gaps_s())
        return [
            self.name,
            self.policy,
            len(r.played),
            r.refused,
            gapped,
            _ms(max(r.gaps_s(), default=0.0)),
            round(ratio, 2),
        ]


LEVEL_HEADERS = ("level", "policy", "admitted", "refused", "gapped", "worst gap ms", "p95 first audio / one")


def levels(
    engine: KokoroEngine, rounds: int = 2, config: ServerConfig | None = None, arms: Sequence[str] = ("new", "old")
) -> list[Level]:
    """The issue's levels on the real engine, each of ``arms`` (``ARMS``) in turn: one session (to
    read N and the first-audio baseline), N together, N at random over a second, 2N+4 together."""
    config = config or ServerConfig()
    out: list[Level] = []
    for _ in range(rounds):
        for policy in arms:
            out.extend(_levels_once(engine, policy, config))
    return out


def _levels_once(engine: KokoroEngine, policy: str, config: ServerConfig) -> list[Level]:
    beside = policy != "old"
    if policy == "unheld":
        engine = engine.configured(unheld(engine.policy))
    elif policy == "old":
        engine = old_windows(engine)
    ones = [asyncio.run(run_burst(engine, Burst(1), config, beside=beside)) for _ in range(3)]
    one_s = statistics.median(r.first_audio_s()[0] for r in ones)
    n, crowd = load_levels(statistics.median(r.played[0].audio_per_wall_s for r in ones))
    bursts = {f"N={n} together": Burst(n), f"N={n} random": Burst(n, "random"), f"{crowd} together": Burst(crowd)}
    return [
        Level(name, policy, asyncio.run(run_burst(engine, b, config, beside=beside)), one_s)
        for name, b in bursts.items()
    ]


def _p95(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ms(seconds: float) -> int:
    return round(1000 * seconds)
