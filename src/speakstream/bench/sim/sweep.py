"""The simulator's sweep: machine speed x arrivals x load x text pace, each cell what its listeners
heard (gaps, first audio against one session's), as rows, a Markdown table and a plot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from speakstream.bench.sim.burst import Burst, BurstResult, simulate_burst
from speakstream.bench.sim.cost import CostModel
from speakstream.bench.tables import table
from speakstream.config import ServerConfig

SPEEDS = (0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0)
ARRIVALS = ("together", "random", "staggered")
PACES = (None, 20.0, 60.0, 100.0)
SEEDS = 3
"""Random arrivals are drawn this many ways; a cell reports the worst."""


def load_levels(one_rate: float) -> tuple[int, int]:
    """N (70% of one session's audio seconds a second, rounded down, 2 to 4) and 2N+4: the
    levels the issue's bench runs at on this machine speed."""
    n = max(2, min(4, int(0.7 * one_rate)))
    return n, 2 * n + 4


@dataclass(frozen=True, slots=True)
class Cell:
    speed: float
    sessions: int
    arrival: str
    pace: float | None
    admitted: int
    refused: int
    worst_gap_s: float
    gapped: int
    """Admitted listeners that heard a gap."""
    first_audio_ratio: float
    """The slowest admitted first audio over one session's (same speed and pace)."""

    @property
    def row(self) -> list[object]:
        pace = "whole" if self.pace is None else f"{self.pace:g} tok/s"
        cells = [f"{self.speed:g}x", self.sessions, self.arrival, pace, self.admitted, self.refused]
        return [*cells, self.gapped, round(1000 * self.worst_gap_s), round(self.first_audio_ratio, 1)]


HEADERS = ("speed", "sessions", "arrival", "text", "admitted", "refused", "gapped", "worst gap ms", "first audio / one")


def sweep(
    cost: CostModel,
    speeds: Sequence[float] = SPEEDS,
    arrivals: Sequence[str] = ARRIVALS,
    paces: Sequence[float | None] = PACES,
    config: ServerConfig | None = None,
) -> list[Cell]:
    """Every cell, at the levels each speed calls for (``load_levels``)."""
    cells = []
    for speed in speeds:
        at = cost.at(speed)
        ones = {pace: simulate_burst(at, Burst(1, tokens_per_s=pace), config).played[0] for pace in paces}
        levels = load_levels(ones[None].audio_per_wall_s)
        for sessions in levels:
            for arrival in arrivals:
                for pace in paces:
                    runs = [
                        simulate_burst(at, Burst(sessions, arrival, tokens_per_s=pace, seed=seed), config)
                        for seed in range(SEEDS if arrival == "random" else 1)
                    ]
                    cells.append(_cell(speed, sessions, arrival, pace, runs, ones[pace].ttfa_s))
    return cells


def _cell(speed: float, sessions: int, arrival: str, pace: float | None, runs: list[BurstResult], one_s: float) -> Cell:
    gaps = [g for run in runs for g in run.gaps_s()]
    firsts = [f for run in runs for f in run.first_audio_s()]
    return Cell(
        speed,
        sessions,
        arrival,
        pace,
        min(len(run.played) for run in runs),
        max(run.refused for run in runs),
        max(gaps, default=0.0),
        max(sum(g > 0 for g in run.gaps_s()) for run in runs),
        max(firsts, default=0.0) / one_s,
    )


def markdown(cells: Sequence[Cell]) -> str:
    return table(HEADERS, [cell.row for cell in cells])


def plot(cells: Sequence[Cell], path: Path) -> Path:
    """Worst gap and first audio against one session's, against machine speed, by arrival."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (gaps, firsts) = plt.subplots(1, 2, figsize=(11, 4))
    for arrival in sorted({c.arrival for c in cells}):
        for level, style in (("N", "-"), ("2N+4", "--")):
            mine = _level(cells, arrival, level)
            speeds = [c.speed for c in mine]
            label = f"{arrival}, {level}"
            gaps.plot(speeds, [1000 * c.worst_gap_s for c in mine], style, marker="o", label=label)
            firsts.plot(speeds, [c.first_audio_ratio for c in mine], style, marker="o", label=label)
    gaps.set(xlabel="machine speed (x calibrated)", ylabel="worst gap of an admitted listener (ms)")
    firsts.set(xlabel="machine speed (x calibrated)", ylabel="slowest first audio / one session's")
    gaps.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _level(cells: Sequence[Cell], arrival: str, level: str) -> list[Cell]:
    """The worst cell over text paces at each speed, at level ``N`` or ``2N+4``."""
    out = []
    for speed in sorted({c.speed for c in cells}):
        here = [c for c in cells if c.speed == speed and c.arrival == arrival]
        sizes = sorted({c.sessions for c in here})
        size = sizes[0] if level == "N" else sizes[-1]
        chosen = [c for c in here if c.sessions == size]
        out.append(max(chosen, key=lambda c: (c.worst_gap_s, c.first_audio_ratio)))
    return out
