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
from speakstream.bench.player import Playback
from speakstream.bench.spectra import logmel_distance
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.front import Utterance
from speakstream.engine.windows.planner import FRAME_SAMPLES, Situation, opening_frames
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.engine.windows.speed import Speed
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


def differences_line(fidelity: dict[str, Any]) -> str:
    """How many utterances Whisper heard with more (and fewer) word errors windowed, and the words."""
    differences = fidelity.get("differences")
    if differences is None:
        return ""  # a run from before they were kept
    worse = [d for d in differences if d["errors_windowed"] > d["errors_whole"]]
    better = len(differences) - len(worse)
    count = fidelity["utterances"]
    if not differences:
        return f"\nWhisper made the same number of word errors in both decodes of all {count} utterances.\n"
    heard = "; ".join(f'"{d["heard_windowed"]}" ({d["voice"]}, windows {d["window_frames"]})' for d in worse[:3])
    return (
        f"\nWhisper's word errors differed in {len(differences)} of {count} utterances: "
        f"more windowed in {len(worse)}, fewer in {better}"
        + (f". Heard windowed: {heard}" if heard else "")
        + " (every one in `results.json`, `fidelity.differences`).\n"
    )


def utterance(engine: KokoroEngine, text: str, voice: str) -> Utterance:
    """The front's output for ``text`` (its first part) in ``voice``, at speed 1."""
    if engine.runner is None:
        raise RuntimeError("the engine runs a whole graph (graph != fast)")
    part = engine.parts(text, engine.check_voice(voice).speaks)[0]
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
                    with engine.using(windowed if mode == "windowed" else WindowPolicy.whole()):
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


def _opening(p: dict[str, Any]) -> str:
    """The opening window's size, why when the decoder's speed made it longer than the least, and
    its size on a decoder shared with other replies when that differs (runs before it: not said)."""
    frames, least = p.get("opening_frames", p["first_frames"]), p["first_frames"]
    crowded = p.get("crowded_opening_frames")  # runs before it: not said
    crowding = "" if crowded is None else f"{crowded} while more replies wait for their first audio than the lanes"
    if crowded is not None and "crowded_snap_frames" in p:  # runs before it: not said
        decoder = p.get("crowded_decoder")
        crowding += f", its end moved forward by up to {p['crowded_snap_frames']} frames" + (
            f" and decoded by the {decoder} decoder" if decoder else ""
        )
    if frames == least:
        return f"{least} ({crowding})" if crowding else str(least)
    frame_ms = p.get("opening_frame_ms", p.get("device_frame_ms"))  # the key in earlier runs
    shared = p.get("shared_opening_frames")
    return (
        f"{frames} (at least {least}, more on a slow decoder: at {frame_ms} ms a frame here, "
        f"{frames} for each next window's compute to fit in {p['opening_safety']} of the audio buffered"
        + ("" if shared in (None, frames) else f"; {shared} while other replies share the decoder")
        + (f"; {crowding}" if crowding else "")
        + ")"
    )


def _paired(p: dict[str, Any]) -> str:
    split = p.get("split_frames")
    if not split:
        return ""  # a run from before pairs, or an engine without two narrow lanes
    return (
        f" (a window of {split} frames or more, while nothing else runs, decoded as two halves at once "
        f"on two narrow lanes, each half up to {p['max_frames']})"
    )


def _after_opening(p: dict[str, Any]) -> str:
    """The context after the window that opens a reply, when it has its own (runs before it: not said)."""
    frames = p.get("opening_context_frames")
    return "" if frames is None else f"{frames} after the window that opens a reply (the listener waits for it), "


def _snapped(p: dict[str, Any]) -> str:
    """How far the opening window's end may move forward to a word gap (runs before it: not at all)."""
    if not p.get("opening_snap_frames"):
        return ""
    return (
        f" (its end moved forward by up to {p['opening_snap_frames']} frames when that puts it between "
        "words: the window after it starts with the smaller context)"
    )


def markdown(result: dict[str, Any]) -> str:
    f, p = result["fidelity"], result["policy"]
    lines = [
        f"Windows (frames of 25 ms): {_opening(p)} first in the chunk that opens a reply{_snapped(p)}; after it, "
        "through the server, each window as large as the listener's buffer allows (its compute, context "
        f"included, within {p.get('safety', 0.75)} of the audio buffered; never smaller than a window that "
        "keeps up while the other replies take their turns, and the largest once that is slower than real time), "
        f"up to {p['max_frames']}{_paired(p)}; used directly, the engine grows them {p.get('growth', 2.5)}x. "
        "Context: "
        f"{p.get('lead_context_frames', 16)} frames before a chunk's first window (silence), "
        f"{_after_opening(p)}"
        f"{p.get('gap_context_frames', p['context_frames'])} around a seam between words and "
        f"{p['context_frames']} around every other side, and no window after the second sized under "
        f"{p.get('min_frames', 0)} frames, the last included (the decoder's instance norms need a span to "
        f"sound right; the second follows a short buffer down to {p['first_frames']}); "
        "seams after the first moved to fall between words: back by up to "
        f"{p.get('snap_frames', 0)} frames, else forward by up to {p.get('snap_ahead_frames', 0)}, "
        f"leaving no window or rest under {p['first_frames']} frames; "
        f"{p['crossfade_samples']}-sample crossfade; the sine source's phase carried across windows. "
        "The fidelity rows decode every utterance as an opening chunk, its windows sized as the server "
        "sizes them for one listener.\n",
        table(
            ["fidelity (same front output)", "whole decode", "windowed"],
            [
                ["utterances / audio s", f"{f['utterances']} / {f['audio_s']}", ""],
                ["WER (Whisper)", f"{100 * f['wer_whole']:.1f}%", f"{100 * f['wer_windowed']:.1f}%"],
                ["log-mel distance to the whole decode, dB (mean)", "0", f["logmel_db"]["mean"]],
                ["for scale: the whole decode 5 ms late, dB", f["logmel_db_5ms_delay"]["mean"], ""],
                [
                    "largest step within 5 ms of a seam (max) / 99.9th pct elsewhere (mean)",
                    "",
                    f"{f['seam_step']['max']} / {f['step_p999_elsewhere']['mean']}",
                ],
                ["seams whose step is over that utterance's 99.9th pct", "", f"{f['seams_over_p999']} of {f['seams']}"],
                [
                    "first audio ms (decoder only, mean)",
                    f["first_audio_ms_whole"]["mean"],
                    f["first_audio_ms_windowed"]["mean"],
                ],
                ["throughput (whole time / windowed time)", "1.0", f["throughput_ratio"]],
            ],
        ),
    ]
    if differences := differences_line(f):
        lines.append(differences)
    latency = result.get("latency")
    if latency:
        rows = [
            [case, r["whole"]["mean"], r["whole"]["p50"], r["windowed"]["mean"], r["windowed"]["p50"], r["whole"]["n"]]
            for case, r in latency.items()
            if isinstance(r, dict) and "whole" in r
        ]
        lines += [
            "\nThrough the server (first audio, ms; the engine switched per trial, interleaved):\n",
            table(["text", "whole mean", "whole p50", "windowed mean", "windowed p50", "trials"], rows),
            f"\n40-word sentence, `chunking: none`: **{latency['forty_word_ratio']}x** sooner windowed. "
            f"Four-sentence reply: whole text as one message with whole decoding vs our chunker with windows: "
            f"**{latency['four_sentence_ratio']}x** sooner.",
        ]
        if "served" in latency:
            served = [
                [
                    case,
                    r["whole"]["audio_per_wall_s"],
                    r["windowed"]["audio_per_wall_s"],
                    round(r["windowed"]["audio_per_wall_s"] / r["whole"]["audio_per_wall_s"], 3),
                    f"{r['whole']['gaps']} / {r['windowed']['gaps']}",
                ]
                for case, r in latency["served"].items()
            ]
            lines += [
                "\nAs served (the same trials): audio seconds per wall second from the request to the last "
                "audio, and gaps a real-time player heard (all trials):\n",
                table(["text", "whole", "windowed", "windowed / whole", "gaps whole / windowed"], served),
            ]
    return "\n".join(lines)
