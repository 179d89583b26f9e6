"""Edge silence: trim what the model leaves at the ends so chunks join without gaps or pops.

Kokoro pads an utterance with silence of varying length. We cut to the first and last 10 ms
frame whose RMS is within ``threshold_db`` of the loudest frame, keep short pads (longer after a
sentence than after a clause, so a stream of chunks has natural pauses) and fade the cut edges
over a few milliseconds so no click is heard at a join.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgePolicy:
    """Where a chunk's audio starts and ends; the evidence for each value is in ``docs/design.md``."""

    threshold_db: float = -42.0
    """A 10 ms frame within this of the loudest carries speech."""
    lead_s: float = 0.02
    """Kept before the first frame that carries speech."""
    sentence_tail_s: float = 0.45
    """Silence kept after the sound of a chunk that ends a sentence (padded where the model's
    frames end sooner) ..."""
    clause_tail_s: float = 0.15
    """... a clause ..."""
    other_tail_s: float = 0.18
    """... or anything else."""
    final_lengthening_s: float = 0.18
    """How far the durations of an utterance's last word run past its sound, at least, when only
    punctuation follows it (Kokoro lengthens a final sound, then decodes the rest as silence): a
    chunk's end is planned from there, so its tail, not the model, sets the pause at a join."""
    fade_s: float = 0.004
    """Fade over each cut edge, so no click is heard at a join."""
    onset_reach_s: float = 0.13
    """How long before its first word's frames a chunk's sound may begin: Kokoro's decoder starts
    a word's sound early, so a chunk is decoded from this much before its first word and its first
    piece cut to its speech (``trim_onset``)."""

    def tail_for(self, text: str) -> float:
        end = text.rstrip(" \"'”’)]»")[-1:]
        if end in ".!?…。！？":
            return self.sentence_tail_s
        if end in ",;:—–，；：":
            return self.clause_tail_s
        return self.other_tail_s


def frame_db(samples: NDArray[np.float32], sample_rate: int) -> NDArray[np.float64]:
    """The loudness of each whole 10 ms frame of ``samples``, in dB under the loudest (none when
    they are shorter than one)."""
    frame = max(1, sample_rate // 100)
    count = len(samples) // frame
    if count == 0:
        return np.zeros(0)
    frames = samples[: count * frame].reshape(count, frame).astype(np.float64)
    rms = np.sqrt(np.mean(frames * frames, axis=1)) + 1e-12
    db: NDArray[np.float64] = 20 * np.log10(rms / rms.max())
    return db


def speech_bounds(samples: NDArray[np.float32], sample_rate: int, threshold_db: float) -> tuple[int, int]:
    """First and one-past-last sample of the frames that carry speech."""
    frame = max(1, sample_rate // 100)
    loud = np.flatnonzero(frame_db(samples, sample_rate) > threshold_db)
    if loud.size == 0:
        return 0, len(samples)
    return int(loud[0] * frame), min(len(samples), int((loud[-1] + 1) * frame))


def trim_edges(
    samples: NDArray[np.float32], sample_rate: int, text: str, policy: EdgePolicy
) -> tuple[NDArray[np.float32], int]:
    """Trimmed samples and how many samples were cut from the head."""
    start, end = speech_bounds(samples, sample_rate, policy.threshold_db)
    head = max(0, start - int(policy.lead_s * sample_rate))
    tail = end + int(policy.tail_for(text) * sample_rate)
    out = np.concatenate([samples[head:tail], np.zeros(max(0, tail - len(samples)))]).astype(np.float32)
    fade = min(len(out) // 2, int(policy.fade_s * sample_rate))
    if fade > 0:
        ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
        out[:fade] *= ramp
        out[-fade:] *= ramp[::-1]
    return out, head


def trim_onset(
    samples: NDArray[np.float32], sample_rate: int, policy: EdgePolicy, latest: int
) -> tuple[NDArray[np.float32], int]:
    """``samples`` (a chunk's first piece, decoded from before its speech can begin) cut to
    ``lead_s`` before their first 10 ms frame within ``threshold_db`` of their loudest, never past
    ``latest`` samples, and faded in; and how many samples were cut."""
    start, _ = speech_bounds(samples, sample_rate, policy.threshold_db)
    cut = min(latest, max(0, start - int(policy.lead_s * sample_rate)))
    if cut <= 0:
        return samples, 0
    out = samples[cut:].astype(np.float32, copy=True)
    fade = min(len(out), int(policy.fade_s * sample_rate))
    out[:fade] *= np.linspace(0.0, 1.0, fade, dtype=np.float32)
    return out, cut
