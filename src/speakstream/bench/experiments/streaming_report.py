"""The streaming experiment's section of the bench report, from its results (a run from before a
key was kept says nothing of it)."""

from __future__ import annotations

from typing import Any

from speakstream.bench.tables import table


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


def markdown(result: dict[str, Any]) -> str:
    f, p = result["fidelity"], result["policy"]
    lines = [_windows_line(p), _fidelity_table(f)]
    if differences := differences_line(f):
        lines.append(differences)
    if latency := result.get("latency"):
        lines += _latency_lines(latency)
    return "\n".join(lines)


def _windows_line(p: dict[str, Any]) -> str:
    """How the windows were sized and joined, in the run's own values."""
    return (
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
        "sizes them for one listener.\n"
    )


def _fidelity_table(f: dict[str, Any]) -> str:
    return table(
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
    )


def _latency_lines(latency: dict[str, Any]) -> list[str]:
    """First audio through the server, whole against windowed, and what was served."""
    rows = [
        [case, r["whole"]["mean"], r["whole"]["p50"], r["windowed"]["mean"], r["windowed"]["p50"], r["whole"]["n"]]
        for case, r in latency.items()
        if isinstance(r, dict) and "whole" in r
    ]
    lines = [
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
    return lines


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
