"""The GPU check, run here on the CPU provider: the pack's inputs load, the runner's audio for each
opening is the CPU's that the pack carries, and it measures what the issue asks for."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

from speakstream.engine.kokoro import KokoroEngine

SCRIPTS = Path(__file__).parents[2] / "scripts"


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_windows_cover_each_reply_once() -> None:
    pack = script("gpu_pack")
    for frames in (1, 20, 21, 108, 109, 500):
        spans = pack.spans(frames)
        assert spans[0][0] == 0 and spans[-1][1] == frames
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))


def test_the_runner_measures_the_packed_replies_on_the_cpu(kokoro: KokoroEngine, tmp_path: Path) -> None:
    pack, check = script("gpu_pack"), script("gpu_check")
    assert pack.inputs(tmp_path) == 8
    replies, references = check.load(tmp_path)
    decoder = check.session(tmp_path)
    assert check.against_cpu(decoder, replies, references)["worst_snr_db"] > 90
    assert check.throughput(decoder, replies[:2], 2, batched=True) > 0
    assert check.throughput(decoder, replies[:2], 2, batched=False) > 0
