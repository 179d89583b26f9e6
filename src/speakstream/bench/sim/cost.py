"""What the engine's work costs in time, as a model calibrated on a machine (``calibrate``) and
saved, so the simulator can run a burst at that machine's speed or any multiple of it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from speakstream.engine.model.assets import cache_dir


def calibration(cores: int) -> Path:
    """Where the calibration of an engine on ``cores`` CPUs is saved."""
    return cache_dir() / f"sim-cost-{cores}cpu.json"


@dataclass(frozen=True, slots=True)
class CostModel:
    """Seconds of each kind of inference, run alone, at the calibrated speed (``speed`` 1.0)."""

    frame_wide_s: float = 0.0062
    """The main decoder, a decoded frame (context included) on the wide copy (every core)."""
    frame_narrow_s: float = 0.0098
    """The same on a narrow copy (a share of the cores)."""
    crowded_ratio: float = 1.0
    """The crowded decoder's frame against the main one's."""
    window_s: float = 0.0
    """Each decoder inference's fixed cost (feeds, stitching, the runtime's overhead)."""
    front_s: float = 0.009
    """Each chunk's phonemes and front, fixed part."""
    front_char_s: float = 0.00074
    """Each chunk's phonemes and front, per character of its text."""
    opening_s: float = 0.06
    """What a reply's first audio takes besides its inferences (the event loop, thread hand-offs,
    the first chunk read and encoded): one real reply's first audio less the simulated one's."""
    frames_per_char: float = 2.54
    """Audio frames (25 ms) a character of English text speaks at speed 1."""
    contention: float = 0.11
    """The slowdown each inference running beside another suffers (memory, caches), per other."""
    cores: int = 2
    """The cores the calibrated engine used."""
    speed: float = 1.0
    """The machine's speed against the calibrated one's (2.0: everything takes half the time)."""

    def at(self, speed: float) -> CostModel:
        """This model on a machine ``speed`` times as fast as the calibrated one."""
        return replace(self, speed=speed)

    def decode_s(self, frames: int, *, narrow: bool, crowded: bool = False) -> float:
        per = self.frame_narrow_s if narrow else self.frame_wide_s
        return (self.window_s + frames * per * (self.crowded_ratio if crowded else 1.0)) / self.speed

    def front_cost_s(self, chars: int, *, narrow: bool, opening: bool = False) -> float:
        slower = self.frame_narrow_s / self.frame_wide_s if narrow else 1.0
        extra = self.opening_s if opening else 0.0
        return (self.front_s + extra + chars * self.front_char_s * slower) / self.speed

    def save(self, path: Path | None = None) -> Path:
        path = path or calibration(self.cores)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(replace(self, speed=1.0)), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, cores: int = 2, path: Path | None = None) -> CostModel:
        """The saved calibration on ``cores`` CPUs (``calibrate``), else the defaults (2 cores)."""
        path = path or calibration(cores)
        if not path.exists():
            return cls() if cores == 2 else cls(cores=cores, frame_narrow_s=cls().frame_wide_s, contention=0.0)
        return cls(**json.loads(path.read_text()))
