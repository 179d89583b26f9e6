"""The GPU check's runner: the batched decoder on the CUDA provider, against the anchors of issue 64.

Runs on the GPU host with numpy and the unpacked ``onnxruntime-gpu`` only (no speakstream): the
pack (``scripts/gpu_pack.py``) brings the float batched decoder and every window's inputs, made on
the CPU for a fixed set of replies (phonemes, front, sine phase), and the CPU's audio for each
reply's opening. Writes JSON: the device as ``nvidia-smi`` names it, the providers, the onnxruntime
version, the opening's first audio (one session; sixteen at once, batched and not), audio seconds a
second at each session count (batched and not), and the GPU's opening audio against the CPU's.

    PYTHONPATH=<unpacked wheel> python3 scripts/gpu_check.py --pack <dir> --out gpu.json
    python scripts/gpu_check.py --pack <dir> --out gpu.json --sessions 1,2    # here: the CPU's
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

SAMPLES_PER_FRAME = 600
SAMPLE_RATE = 24_000
NAMES = ("features", "f0", "energy", "style", "phase")


def load(pack: Path) -> tuple[list[list[dict[str, Any]]], list[np.ndarray]]:
    """Each reply's windows (the decoder's feed, the frames it keeps) and its opening's CPU audio."""
    index = json.loads((pack / "index.json").read_text())
    arrays = np.load(pack / "inputs.npz")
    replies = []
    for r, reply in enumerate(index["replies"]):
        windows = []
        for w, keep in enumerate(reply["keep_frames"]):
            feed = {index["inputs"][n]: arrays[f"{r}/{w}/{n}"] for n in NAMES}
            windows.append({"feed": feed, "keep": keep, "frames": feed[index["inputs"]["features"]].shape[2]})
        replies.append(windows)
    return replies, [arrays[f"{r}/reference"] for r in range(len(replies))]


def session(pack: Path) -> Any:
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):  # the CUDA and cuDNN libraries of the host's NVIDIA wheels
        ort.preload_dlls()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    wanted = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    return ort.InferenceSession(str(pack / "decoder.batched.onnx"), options, providers=wanted)


def run(decoder: Any, feeds: list[dict[str, Any]]) -> np.ndarray:
    """Same-length windows as one batch: [len(feeds), samples]."""
    stacked = {name: np.concatenate([f[name] for f in feeds]) for name in feeds[0]}
    (audio,) = decoder.run(["audio"], stacked)
    return np.asarray(audio)


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50": round(float(np.percentile(ms, 50)), 1), "p95": round(float(np.percentile(ms, 95)), 1)}


def first_audio(decoder: Any, replies: list[list[dict[str, Any]]], trials: int) -> dict[str, Any]:
    """An opening's decode alone, then sixteen openings at once: one batch, or each its own run."""
    openings = [r[0]["feed"] for r in replies]
    alone = []
    for t in range(trials):
        started = time.perf_counter()
        run(decoder, [openings[t % len(openings)]])
        alone.append(time.perf_counter() - started)
    crowd = [openings[i % len(openings)] for i in range(16)]
    batched, unbatched = [], []
    for _ in range(max(1, trials // 4)):
        started = time.perf_counter()
        run(decoder, crowd)
        batched += [time.perf_counter() - started] * 16
        unbatched += each_its_own(decoder, crowd)
    return {"1": percentiles(alone), "16 batched": percentiles(batched), "16 unbatched": percentiles(unbatched)}


def each_its_own(decoder: Any, feeds: list[dict[str, Any]]) -> list[float]:
    """Each window its own run, all started at once from a thread each: when each one's audio came."""
    started = time.perf_counter()

    def one(feed: dict[str, Any]) -> float:
        run(decoder, [feed])
        return time.perf_counter() - started

    with ThreadPoolExecutor(len(feeds)) as pool:
        return list(pool.map(one, feeds))


def throughput(decoder: Any, replies: list[list[dict[str, Any]]], sessions: int, batched: bool) -> float:
    """Audio seconds a second: ``sessions`` replies decoded window by window, each step's windows
    batched by length, or each its own run from a thread per session."""
    chosen = [replies[i % len(replies)] for i in range(sessions)]
    audio = sum(w["keep"] for r in chosen for w in r) * SAMPLES_PER_FRAME / SAMPLE_RATE
    started = time.perf_counter()
    if batched:
        for step in range(max(len(r) for r in chosen)):
            by_length: dict[int, list[dict[str, Any]]] = {}
            for reply in chosen:
                if step < len(reply):
                    by_length.setdefault(reply[step]["frames"], []).append(reply[step]["feed"])
            for feeds in by_length.values():
                run(decoder, feeds)
    else:
        with ThreadPoolExecutor(sessions) as pool:
            list(pool.map(lambda reply: [run(decoder, [w["feed"]]) for w in reply], chosen))
    return float(round(audio / (time.perf_counter() - started), 1))


def against_cpu(decoder: Any, replies: list[list[dict[str, Any]]], references: list[np.ndarray]) -> dict[str, float]:
    """The GPU's opening audio against the CPU's: the worst SNR and the largest difference."""
    snrs, largest = [], 0.0
    for reply, cpu in zip(replies, references, strict=True):
        gpu = run(decoder, [reply[0]["feed"]])[0]
        error = gpu - cpu
        snrs.append(10 * np.log10(np.sum(cpu**2) / max(float(np.sum(error**2)), 1e-30)))
        largest = max(largest, float(np.abs(error).max()))
    return {"worst_snr_db": float(round(min(snrs), 1)), "largest_difference": round(largest, 5)}


def device_name() -> str:
    try:
        names = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
        return names.stdout.strip() or "unknown"
    except OSError:
        return "no nvidia-smi"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pack", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sessions", default="1,4,16,64")
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args()
    import onnxruntime as ort

    replies, references = load(args.pack)
    decoder = session(args.pack)
    for reply in replies:  # warm: each length once (the CUDA provider plans per shape)
        for window in reply:
            run(decoder, [window["feed"]])
    result: dict[str, Any] = {
        "device": device_name(),
        "providers": decoder.get_providers(),
        "onnxruntime": ort.__version__,
        "check": against_cpu(decoder, replies, references),
        "first_audio_ms": first_audio(decoder, replies, args.trials),
        "audio_s_per_s": {},
    }
    for count in (int(n) for n in args.sessions.split(",")):
        result["audio_s_per_s"][str(count)] = {
            "batched": throughput(decoder, replies, count, batched=True),
            "unbatched": throughput(decoder, replies, count, batched=False),
        }
        print(json.dumps({"sessions": count, **result["audio_s_per_s"][str(count)]}), flush=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
