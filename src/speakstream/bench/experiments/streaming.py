"""Streaming inside a chunk: the decoder in windows against the decoder run whole.

Fidelity, on the same front output: log-mel distance (with, for scale, what a 5 ms delay of the
whole decode alone gives), the largest sample step within 5 ms of a seam against the 99.9th
percentile of steps elsewhere (a click would stand out), and Whisper's WER for both. Speed: first
audio and audio seconds per wall second of the engine. Then, through the server and interleaved
(the engine switched between windowed and whole decoding), first audio of a 40-word sentence sent
with ``chunking: none`` and of the four-sentence reply.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.bench.asr import corpus_wer, normalize_words, recognizer, word_errors
from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.accuracy import SENTENCES, VOICES
from speakstream.bench.experiments.streaming_report import markdown as markdown  # the report reads it here
from speakstream.bench.player import Playback
from speakstream.bench.spectra import logmel_distance
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import summary
from speakstream.client import SpeechSession
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.front import Utterance
from speakstream.engine.windows.planner import FRAME_SAMPLES, Situation, opening_frames
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.engine.windows.stream import UtteranceWindows
from speakstream.scheduler import PlaybackClock
from speakstream.types import Load

NAME = "streaming"
TITLE = "Streaming inside a chunk: windowed vs whole decoding"
FORTY_WORDS = (
    "The first is the standard plan, which costs twelve dollars a month and includes fifty gigabytes of "
    "storage, email support, and access on up to three devices for everyone in your home, so the whole "
    "family can share it easily."
)
SEAM_REACH = 120
"""5 ms at 24 kHz: how near a seam a sample step counts as at the seam."""


async def run(ctx: BenchContext) -> dict[str, Any]:
    engine = ctx.engine_source()
    if engine.runner is None:
        raise RuntimeError("the engine runs a whole graph (graph != fast): nothing to compare")
    fidelity = await asyncio.to_thread(_fidelity, ctx, engine)
    latency = await _latency(ctx, engine) if ctx.runtime is not None else None
    return {"fidelity": fidelity, "latency": latency, "policy": _policy(engine.policy, engine.runner, engine.edges)}


def _policy(policy: WindowPolicy, runner: Runner, edges: EdgePolicy) -> dict[str, float | str | None]:
    """The policy as the report states it, with the opening sizes it gives at the speed measured."""
    speed, silent_s = runner.speed.reading(), edges.onset_reach_s
    alone, shared = Situation(speed, Load()), Situation(speed, Load(in_flight=2))
    opening, seams, budget = policy.opening, policy.seams, policy.budget
    return {
        "first_frames": opening.least_frames,
        "opening_frames": opening_frames(policy, alone, silent_s, crowded=False)[0],
        "shared_opening_frames": opening_frames(policy, shared, silent_s, crowded=False)[0],
        "crowded_opening_frames": opening_frames(policy, shared, silent_s, crowded=True)[0],
        "crowded_snap_frames": opening.crowded_reach_frames,
        "crowded_decoder": runner.model.crowded_decoder_name if opening.crowded_decoder else None,
        "opening_snap_frames": opening.reach_frames,
        "opening_frame_ms": None if speed.opening_s is None else round(1000 * speed.opening_s, 2),
        "opening_safety": opening.cover_share,
        "max_frames": budget.most_frames,
        "min_frames": budget.least_frames,
        "lead_context_frames": seams.lead_context_frames,
        "opening_context_frames": opening.context_after_frames,
        "context_frames": seams.context_frames,
        "gap_context_frames": seams.gap_context_frames,
        "growth": budget.growth,
        "crossfade_samples": seams.crossfade_samples,
        "safety": budget.share,
        "snap_frames": seams.back_frames,
        "snap_ahead_frames": seams.ahead_frames,
        "split_frames": policy.split.frames if runner.model.pairs_possible else 0,
    }


def _fidelity(ctx: BenchContext, engine: KokoroEngine) -> dict[str, Any]:
    asr = recognizer()
    voices = VOICES[:1] if ctx.quick else VOICES
    sentences = [*SENTENCES, FORTY_WORDS][:3] if ctx.quick else [*SENTENCES, FORTY_WORDS]
    rows: list[dict[str, float]] = []
    pairs: dict[str, list[tuple[str, str]]] = {"whole": [], "windowed": []}
    differences: list[dict[str, Any]] = []
    seam_image = None
    for voice in voices:
        for text in sentences:
            u = utterance(engine, text, voice)
            whole, whole_s, whole_first_s = decode_timed(engine, u, WindowPolicy.whole())
            windowed, windowed_s, first_s = decode_timed(engine, u, engine.policy, served=True)
            seams = np.cumsum([len(p) for p in windowed[:-1]])
            joined_whole, joined = np.concatenate(whole), np.concatenate(windowed)
            rows.append(_compare(joined_whole, joined, seams, whole_s, windowed_s, whole_first_s, first_s))
            heard_whole, heard = asr.transcribe(joined_whole, 24_000).text, asr.transcribe(joined, 24_000).text
            pairs["whole"].append((text, heard_whole))
            pairs["windowed"].append((text, heard))
            if (difference := heard_differently(voice, text, heard_whole, heard, windowed)) is not None:
                differences.append(difference)
            if seam_image is None and len(seams):
                seam_image = _seam_plot(joined_whole, joined, int(seams[0]), ctx.out / "seam.png")
        ctx.say(f"streaming fidelity {voice}: {len(rows)} utterances")
    return {
        "utterances": len(rows),
        "logmel_db": summary([r["logmel_db"] for r in rows]),
        "logmel_db_5ms_delay": summary([r["delay_db"] for r in rows]),
        "seam_step": summary([r["seam_step"] for r in rows]),
        "step_p999_elsewhere": summary([r["p999"] for r in rows]),
        "seams_over_p999": sum(1 for r in rows if r["seam_step"] > r["p999"]),
        "seams": int(sum(r["seams"] for r in rows)),
        "wer_whole": round(corpus_wer(pairs["whole"]), 4),
        "wer_windowed": round(corpus_wer(pairs["windowed"]), 4),
        "differences": differences,
        "first_audio_ms_whole": summary([1000 * r["whole_first_s"] for r in rows]),
        "first_audio_ms_windowed": summary([1000 * r["first_s"] for r in rows]),
        "throughput_ratio": round(sum(r["whole_s"] for r in rows) / sum(r["windowed_s"] for r in rows), 3),
        "audio_s": round(sum(r["audio_s"] for r in rows), 1),
        "image": seam_image,
    }


def heard_differently(
    voice: str, text: str, heard_whole: str, heard: str, windowed: list[NDArray[np.float32]]
) -> dict[str, Any] | None:
    """What Whisper heard in both decodes of one utterance, and the windows' lengths in frames,
    when they have different word errors (None when the same): a WER gap shows which words and
    which windows made it."""
    reference = normalize_words(text)
    errors = [word_errors(reference, normalize_words(h)) for h in (heard_whole, heard)]
    if errors[0] == errors[1]:
        return None
    return {
        "voice": voice,
        "text": text,
        "errors_whole": errors[0],
        "errors_windowed": errors[1],
        "heard_whole": heard_whole,
        "heard_windowed": heard,
        "window_frames": [round(len(piece) / FRAME_SAMPLES) for piece in windowed],
    }


def utterance(engine: KokoroEngine, text: str, voice: str) -> Utterance:
    """The front's output for ``text`` (its first part) in ``voice``, at speed 1."""
    if engine.runner is None:
        raise RuntimeError("the engine runs a whole graph (graph != fast)")
    part = engine.phoneme_windows(text, engine.check_voice(voice).speaks)[0]
    style = engine.voice_bank.style(voice, len(part.tokens))
    return engine.runner.front(part, style, 1.0, text, None, edges=engine.edges)


def decode_timed(
    engine: KokoroEngine,
    u: Utterance,
    policy: WindowPolicy,
    *,
    served: bool = False,
    load: Load | None = None,
    speed: Speed | None = None,
) -> tuple[list[NDArray[np.float32]], float, float]:
    """Pieces, total seconds and seconds to the first piece, ``u`` decoded as the chunk that opens a
    reply. ``served``: windows sized as the server sizes them for one listener (the reply's
    playback clock), else with no listener known; ``load`` and ``speed``: what the planner reads,
    pinned (a crowded opening, a decoder speed)."""
    if engine.runner is None:
        raise RuntimeError("the engine runs a whole graph (graph != fast)")
    windows = UtteranceWindows(engine.runner, policy, u, opens_reply=True, edges=engine.edges)
    clock, base = PlaybackClock(), load or Load()
    started, first, pieces = time.perf_counter(), 0.0, []
    while not windows.done:
        now = time.perf_counter()
        buffered = clock.ahead_s() if served else None
        step = replace(base, buffered_s=buffered, playing=served and clock.playing, taken_at=now)
        samples, _ = windows.next(step, None, speed=speed)
        first = first or time.perf_counter() - started
        clock.add(len(samples) / 24_000)
        pieces.append(samples)
    return pieces, time.perf_counter() - started, first


def _compare(
    whole: NDArray[np.float32],
    windowed: NDArray[np.float32],
    seams: NDArray[Any],
    whole_s: float,
    windowed_s: float,
    whole_first_s: float,
    first_s: float,
) -> dict[str, float]:
    steps = np.abs(np.diff(windowed))
    near = np.zeros(len(steps), dtype=bool)
    for seam in seams:
        near[max(0, seam - SEAM_REACH) : seam + SEAM_REACH] = True
    delayed = np.concatenate([np.zeros(SEAM_REACH, np.float32), whole[:-SEAM_REACH]])
    return {
        "logmel_db": logmel_distance(whole, windowed),
        "delay_db": logmel_distance(whole, delayed),
        "seam_step": float(steps[near].max()) if near.any() else 0.0,
        "p999": float(np.percentile(steps[~near], 99.9)),
        "seams": float(len(seams)),
        "whole_s": whole_s,
        "windowed_s": windowed_s,
        "whole_first_s": whole_first_s,
        "first_s": first_s,
        "audio_s": len(whole) / 24_000,
    }


def _seam_plot(whole: NDArray[np.float32], windowed: NDArray[np.float32], seam: int, path: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lo, hi = max(0, seam - 4800), min(len(windowed), seam + 4800)
    fig, axes = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
    for ax, (label, audio) in zip(axes, (("whole decode", whole), ("windowed", windowed)), strict=True):
        ax.specgram(audio[lo:hi], NFFT=512, Fs=24_000, noverlap=384, cmap="magma")
        ax.axvline((seam - lo) / 24_000, color="cyan", linestyle="--", linewidth=1)
        ax.set_ylabel(f"{label}\nHz")
    axes[-1].set_xlabel("seconds (the dashed line is the first seam)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


async def _latency(ctx: BenchContext, engine: KokoroEngine) -> dict[str, Any]:
    """First audio through the server, the engine switched between the two decodings per trial."""
    windowed, four = engine.policy, ctx.sized(bench_text(), quick_sentences=2)
    cases = {
        "40 words, chunking none": (FORTY_WORDS, "none"),
        "four sentences, one message": (four, "none"),
        "four sentences, speakstream chunker": (four, "auto"),
    }
    runs: dict[str, dict[str, list[float]]] = {c: {"whole": [], "windowed": []} for c in cases}
    served: dict[str, dict[str, list[Playback]]] = {c: {"whole": [], "windowed": []} for c in cases}
    trials = ctx.trials(5, 1)
    async with SpeechSession(ctx.ws_url) as session:
        await speak_timed(session, "Warm up.")
        for trial in range(trials):
            order = ("whole", "windowed") if trial % 2 == 0 else ("windowed", "whole")
            for case, (text, chunking) in cases.items():
                for mode in order:
                    async with ctx.configured(
                        engine=engine.configured(windowed if mode == "windowed" else WindowPolicy.whole())
                    ):
                        result, playback = await speak_timed(session, text, chunking=chunking)
                    runs[case][mode].append(1000 * (result.ttfa_s or 0.0))
                    served[case][mode].append(playback)
            ctx.say(f"streaming latency trial {trial + 1}/{trials}")
    out: dict[str, Any] = {c: {m: summary(v) for m, v in r.items()} for c, r in runs.items()}
    out["served"] = {c: {m: _served(p) for m, p in r.items()} for c, r in served.items()}
    reference = out["four sentences, one message"]["whole"]["mean"]
    out["four_sentence_ratio"] = round(reference / out["four sentences, speakstream chunker"]["windowed"]["mean"], 2)
    out["forty_word_ratio"] = round(
        out["40 words, chunking none"]["whole"]["mean"] / out["40 words, chunking none"]["windowed"]["mean"], 2
    )
    return out


def _served(playbacks: list[Playback]) -> dict[str, float]:
    """Audio seconds per wall second from the request to the last audio, and the player's gaps."""
    return {
        "audio_per_wall_s": round(sum(p.audio_s for p in playbacks) / sum(p.wall_s for p in playbacks), 3),
        "gaps": sum(len(p.gaps) for p in playbacks),
        "gap_ms": round(1000 * sum(p.stall_s for p in playbacks), 1),
    }
